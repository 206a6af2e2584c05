"""Which fault (if any) the test server injects into one request. Pure."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from warehouse.ids import digest

# transport faults (the reply never reaches the policy) and content faults (a bad reply)
TRANSPORT = ("429", "500", "timeout")
CONTENT = ("malformed", "unknown_tool", "text", "empty")
KINDS = TRANSPORT + CONTENT  # the default mix
# "refuse": a 500 whose body is a validation error, as llama.cpp's server answers a request it will
# never take; only when asked for by name
REFUSALS = ("refuse",)
# "leak": the simulated user volunteers every private fact (only when asked for by name; a planner's
# request with it is answered as usual)
USER_FAULTS = ("leak",)
ALL_KINDS = KINDS + REFUSALS + USER_FAULTS


@dataclass
class FaultConfig:
    """Fault injection for the test server. ``rate`` is the chance a request is faulty;
    ``kinds`` weighs which fault it gets. ``down`` makes every request fail with 503. ``strict``
    refuses requests the way llama.cpp's server does (a 500 with a validation error) when their
    messages break a rule a common server keeps (see :mod:`tests.modelserver.strict`). ``hold``
    keeps every new request waiting, uncounted and unanswered, until the faults are set again
    without it: a test freezes a client mid-round that way instead of racing it. ``slots``
    makes the server work on that many requests at once and queue the rest, timed from when
    they arrived (a server's queue, for the adaptive concurrency's tests and benchmark)."""

    latency_ms: float = 0.0
    token_ms: float = 0.0  # more per completion token, as a real server decodes
    slots: int | None = None  # requests worked on at once; the rest wait in line, as at llama.cpp (None: all)
    report_slots: bool = False  # answer GET /props with total_slots, as llama.cpp's own server does
    rate: float = 0.0
    kinds: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in KINDS})
    retry_after_s: float = 0.05
    timeout_s: float = 5.0  # how long a "timeout" request hangs before answering
    down: bool = False
    strict: bool = False
    hold: bool = False
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaultConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown fault setting(s): {unknown}")
        cfg = cls(**known)
        bad = sorted(set(cfg.kinds) - set(ALL_KINDS))
        if bad:
            raise ValueError(f"unknown fault kind(s): {bad}; known: {list(ALL_KINDS)}")
        return cfg


def pick_fault(cfg: FaultConfig, episode: str, attempt: int) -> str | None:
    """The fault for the ``attempt``-th request of ``episode`` (deterministic), or None."""
    if cfg.down:
        return "down"
    if cfg.rate <= 0:
        return None
    rng = random.Random(int(digest([cfg.seed, episode, attempt], 12), 16))
    if rng.random() >= cfg.rate:
        return None
    kinds = [k for k, w in cfg.kinds.items() if w > 0]
    if not kinds:
        return None
    return rng.choices(kinds, weights=[cfg.kinds[k] for k in kinds])[0]
