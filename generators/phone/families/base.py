"""What every task family shares: task assembly, splits, simulation, mutants.

A family subclass supplies ``sample_params`` (public and private parameters from a
seeded generator), ``populate`` (the world's rows), ``solve`` (the reference
actions) and ``requirements``. Everything else, including the id, split, budget and
the expected state that is computed by running the reference, lives here.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

from generators.phone.apps import install_all
from generators.phone.digests import Baseline
from generators.phone.families.mutants import with_wrong_argument
from generators.phone.longlived import settle_kept_world
from generators.phone.tools import TOOLS, call_tool
from generators.phone.world import World, row_json
from generators.writers.template import TemplateWriter
from warehouse.contract import Action, Requirement, Split, TaskSpec, variant_of
from warehouse.errors import ConfigError
from warehouse.ids import digest, task_id

WORDINGS = ("direct", "casual", "terse")  # how every variant is worded

GENERATOR_VERSION = "0.6"  # 0.3: splits by variant, challenge split; 0.4: F03 revision 2; 0.5: F07, F08 train
# variants; 0.6: F03 revision 4 (nap), F01 revision 1 (train variants calling its dev variants' tools)
MAX_STEPS = 15  # MobilePA-Bench caps a task at 15 steps
TOOLS_PER_TASK = 15  # and offers about 15 candidate tools
MIN_TOOLS = 10  # never so few that the right tool is obvious
WORLD_CACHE = 256  # initial worlds kept per family


class Start(NamedTuple):
    """What an episode starts from: its own world and the cached facts of that initial state."""

    world: World  # a fresh copy, the episode's own to change
    baseline: Baseline  # the initial state's snapshot (the cached world's own rows, never changed) and digests


class UnknownKnobError(ConfigError):
    """A family was asked for a knob it does not have, or at a level it does not take."""


class Writer(Protocol):
    name: str

    def word(self, family_id: str, template: str, public_params: dict[str, Any]) -> str: ...


# every task: whatever the agent claims in finish must be in what an earlier call returned
CLAIMS_GROUNDED = Requirement(id="claims_grounded", kind="claims_grounded", hard=False, weight=0.5, noop_passes=True,
                              description="every claim cites a call whose result holds the fact")
# for families whose answers carry facts (F02, F06): a claim no call returned fails the task
HARD_CLAIMS_GROUNDED = CLAIMS_GROUNDED.model_copy(update={"hard": True})


SPLITS: tuple[Split, ...] = ("train", "dev", "test", "challenge")


def hashed_split(family_id: str, template: str) -> Split:
    """train / dev / test from a hash of the template's *variant* (never the wording or the seed).

    For tasks of families that declare no splits (imported conversations); a registered
    family declares each variant's split in ``Family.splits``.
    """
    bucket = int(digest([family_id, variant_of(template)], 8), 16) % 10
    return "train" if bucket < 6 else "dev" if bucket < 8 else "test"


def call(tool: str, **arguments: Any) -> Action:
    """A tool-call action."""
    return Action(kind="tool_call", tool=tool, arguments=arguments)


def finish(status: str = "completed", answer: Any = None, summary: str = "") -> Action:
    """A finish action; ``answer`` is left out when None."""
    args: dict[str, Any] = {"status": status, "summary": summary}
    if answer is not None:
        args["answer"] = answer
    return Action(kind="finish", tool="finish", arguments=args)


def step_budget(optimal: int) -> int:
    """Room for a few detours, never more than the benchmark's cap."""
    return max(optimal + 2, min(MAX_STEPS, optimal + 6))


class Variant:
    """A variant kept apart from its family's module (e.g. one that puts another app to work):
    the family's hooks for this one variant. The family lists it in ``apart``."""

    name: str = ""
    tools: tuple[str, ...] = ()  # tempting neighbours to expose besides what the reference calls

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        raise NotImplementedError

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        raise NotImplementedError

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        return {}

    def solve(self, task: TaskSpec) -> list[Action]:
        raise NotImplementedError

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        raise NotImplementedError

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        return with_wrong_argument(task, actions, rng)

    def level(self, task: TaskSpec, knob: str) -> int:
        """The level of one knob in a task (as ``Family.level``)."""
        return int(task.private_params.get("knobs", {}).get(knob, task.difficulty))


class Family:
    """Base class of a task family. Subclasses set the class attributes and four hooks.

    Variants listed in ``apart`` bring their own hooks; every call goes through ``hooks``.
    """

    id: str = ""
    title: str = ""
    capability: str = "tool_use"
    tags: tuple[str, ...] = ()  # finer capability tags; the scripted policy's error rates key on them
    templates: tuple[str, ...] = ()
    # variant -> split, declared (not hashed) so every family has every split and adding a
    # variant never moves another; every wording, seed and difficulty of a variant shares it
    splits: dict[str, Split] = {}
    tools: tuple[str, ...] = ()
    max_difficulty: int = 3
    hidden_tools: tuple[str, ...] = ()  # same-app tools never offered (the task is to delegate what they do)
    sessions: int = 1  # sessions of one scenario (they share the user's memory)
    knobs: dict[str, str] = {}  # what difficulty changes, for docs and the planner
    apart: tuple[Variant, ...] = ()  # variants with hooks of their own (their templates are added)
    # bumped when the same seed comes to make another task: a task's id is its content's name, so the
    # ids move with it and a recorded round's task is never confused with a new one under its id
    revision: int = 0
    hard_claims: bool = False  # a claim citing a fact no call returned fails the task, not only costs progress

    # -- hooks --------------------------------------------------------------
    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        """(public, private) parameters for a variant, given every knob's level."""
        raise NotImplementedError

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        """Add the task's rows (targets, decoys, noise) to a world with apps installed."""
        raise NotImplementedError

    def solve(self, task: TaskSpec) -> list[Action]:
        """The reference actions, ending with finish."""
        raise NotImplementedError

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        """The checks, given the row changes the reference makes."""
        raise NotImplementedError

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        """Private facts read off the built world (e.g. an expected count). Default none."""
        return {}

    def hooks(self, variant: str) -> Family | Variant:
        """What implements a variant: one of ``apart``, else the family's own hooks."""
        return next((v for v in self.apart if v.name == variant), self)

    def all_templates(self) -> tuple[str, ...]:
        """The family's templates, then each apart variant's (wordings direct, casual, terse)."""
        return self.templates + tuple(f"{v.name}.{w}" for v in self.apart for w in WORDINGS)

    def variants(self, splits: Iterable[str] = ()) -> list[str]:
        """The family's variants in the order of its templates; with ``splits``, those with a template of them."""
        wanted = set(splits)
        found = (variant_of(t) for t in self.all_templates() if not wanted or self.split_of(t) in wanted)
        return list(dict.fromkeys(found))

    def split_of(self, template: str) -> Split:
        """The split of a template's variant (declared; a hash for an undeclared one)."""
        return self.splits.get(variant_of(template)) or hashed_split(self.id, template)

    # -- difficulty knobs -----------------------------------------------------
    def knob_levels(self, difficulty: int, overrides: dict[str, int] | None = None) -> dict[str, int]:
        """Every knob at ``difficulty``, except those ``overrides`` sets; UnknownKnobError if one is not a knob
        of this family or its level is out of range."""
        levels = {k: difficulty for k in self.knobs}
        for name, level in (overrides or {}).items():
            if name not in self.knobs:
                raise UnknownKnobError(f"family {self.id} has no knob {name!r} (knobs: {', '.join(sorted(self.knobs))})")
            if not isinstance(level, int) or not 1 <= level <= self.max_difficulty:
                raise UnknownKnobError(f"knob {name!r} of {self.id} takes a level 1..{self.max_difficulty}, got {level!r}")
            levels[name] = level
        return levels

    def level(self, task: TaskSpec, knob: str) -> int:
        """The level (1..max_difficulty) of one knob in a task; tasks without levels use their difficulty."""
        return int(task.private_params.get("knobs", {}).get(knob, task.difficulty))

    # -- the public interface ------------------------------------------------
    def _drawn(self, seed: int) -> tuple[random.Random, str]:
        """The seed's random stream and the template it draws first (:meth:`make_task` goes on from there)."""
        rng = random.Random(digest([self.id, "params", seed]))
        templates = self.all_templates()
        return rng, templates[rng.randrange(len(templates))]

    def template_for(self, seed: int) -> str:
        """The template :meth:`make_task` makes from ``seed`` (and so its split), without making the task."""
        return self._drawn(seed)[1]

    def declared_splits(self) -> set[str]:
        """The splits this family has a template of."""
        return {self.split_of(t) for t in self.all_templates()}

    def make_task(self, seed: int, difficulty: int = 1, writer: Writer | None = None,
                  knobs: dict[str, int] | None = None, session: int = 1) -> TaskSpec:
        """A complete, verifiable task from a seed; template and params depend on the seed only.

        ``knobs`` sets single difficulty knobs apart from ``difficulty`` (e.g. ``{"noise": 3}``).
        A variant held out as ``challenge`` is always made at the highest difficulty.
        A family with several ``sessions`` makes one task per session of a scenario (same
        template, params and split); later sessions are worded from ``<variant>.s<n>.<wording>``.
        """
        writer = writer or TemplateWriter()
        rng, template = self._drawn(seed)
        split = self.split_of(template)
        difficulty = self.max_difficulty if split == "challenge" else max(1, min(self.max_difficulty, int(difficulty)))
        levels = self.knob_levels(difficulty, knobs)
        hooks = self.hooks(variant_of(template))
        public, private = hooks.sample_params(rng, variant_of(template), levels)
        private["variant"] = variant_of(template)
        private["knobs"] = levels
        # a knob set apart from the difficulty builds another world, so it is another task
        moved = ",".join(f"{k}={v}" for k, v in sorted(levels.items()) if v != difficulty)
        key = (f"{template}+{moved}" if moved else template) + (f"@r{self.revision}" if self.revision else "")
        first = task_id(self.id, key, seed, difficulty)
        variant, _, wording = template.partition(".")
        task = TaskSpec(
            task_id=first if session == 1 else f"{first}-s{session}", scenario_id=first if self.sessions > 1 else "",
            session=session, family=self.id, template=template, seed=seed,
            difficulty=difficulty, public_params=public, private_params=private,
            instruction=writer.word(self.id, template if session == 1 else f"{variant}.s{session}.{wording}", public),
            writer=writer.name, tools=list(self.tools),
            faults=private.pop("faults", []),
            capabilities=[self.capability, *self.tags], split=split,
            generator_version=GENERATOR_VERSION,
        )
        world = self.build_world(task)
        task.private_params.update(hooks.facts(task, world))  # facts are read off the world, never change it
        reference = hooks.solve(task)
        task.tools = self.exposed_tools(task, reference)
        _, changes = self.simulate(task, reference, world)
        task.requirements = [*hooks.requirements(task, changes),
                             HARD_CLAIMS_GROUNDED if self.hard_claims else CLAIMS_GROUNDED]
        task.optimal_steps = len(reference)
        task.step_budget = step_budget(len(reference))
        return task

    def scenario(self, task: TaskSpec, writer: Writer | None = None) -> list[TaskSpec]:
        """Every session of the task's scenario, in order (just the task for a one-session family)."""
        if self.sessions == 1:
            return [task]
        knobs = {k: v for k, v in task.private_params.get("knobs", {}).items() if v != task.difficulty}
        return [task if n == task.session else self.make_task(task.seed, task.difficulty, writer, knobs or None, n)
                for n in range(1, self.sessions + 1)]

    def exposed_tools(self, task: TaskSpec, reference: list[Action]) -> list[str]:
        """About TOOLS_PER_TASK tools: the ones the reference needs, the family's own list (its
        tempting neighbours), then other tools of the same apps; shuffled so order gives nothing away."""
        needed = [a.tool for a in reference if a.kind == "tool_call" and a.tool in TOOLS]
        hooks = self.hooks(variant_of(task.template))
        neighbours = hooks.tools if isinstance(hooks, Variant) else self.tools
        chosen = list(dict.fromkeys([*needed, *neighbours]))
        apps = {TOOLS[t].app for t in chosen}
        rng = random.Random(digest([task.task_id, "tools"]))
        spare = [t for t in sorted(TOOLS) if TOOLS[t].app in apps and t not in chosen and t not in self.hidden_tools]
        rng.shuffle(spare)
        chosen += spare[: max(0, TOOLS_PER_TASK - len(chosen))]
        if len(chosen) < MIN_TOOLS:  # a small app (the clock): the family's usual tools fill the list
            chosen += [t for t in self.tools if t not in chosen][: MIN_TOOLS - len(chosen)]
        rng.shuffle(chosen)
        return chosen

    def build_world(self, task: TaskSpec) -> World:
        """The initial world, deterministic from the task's seed, difficulty and params."""
        world = World(seed=int(digest([self.id, "world", task.seed, task.difficulty], 12), 16))
        p = task.private_params
        install_all(world, p.get("device_settings"), tuple(p.get("denied_permissions", ())))
        world.faults = [dict(f) for f in task.faults]
        self.hooks(variant_of(task.template)).populate(world, random.Random(world.seed), task)
        return world

    def __getstate__(self) -> dict[str, Any]:
        """A family sent to a worker process (the gate's) goes without its kept worlds: they are
        this process's cache, megabytes once a round has run, and would travel with every chunk."""
        return {k: v for k, v in self.__dict__.items() if k != "_worlds"}

    def initial_world(self, task: TaskSpec) -> Start:
        """A fresh copy of the task's initial world, with what an episode starts from (see :class:`Start`).

        Rollouts, the gate's runs and replays of one task all start from the same world,
        so it is built once and copied (a copy costs a tenth of a build); the cache is
        small and per family instance.
        """
        cache: OrderedDict[tuple[str, str], tuple[World, Baseline]] = self.__dict__.setdefault("_worlds", OrderedDict())
        key = (task.task_id, row_json([task.private_params, task.faults]))  # what the world is built from
        hit = cache.get(key)
        if hit is None:
            world = self.build_world(task)
            # the cached world is never changed, so its own rows are the initial snapshot
            hit = cache[key] = (world, Baseline(world.tables, world.view()))
            if len(cache) > WORLD_CACHE:
                cache.popitem(last=False)
            settle_kept_world()  # kept for long: out of the cyclic GC's walks
        else:
            cache.move_to_end(key)
        return Start(hit[0].copy(), hit[1])

    def reference_actions(self, task: TaskSpec) -> list[Action]:
        """The reference solution, ending with finish."""
        return self.hooks(variant_of(task.template)).solve(task)

    def simulate(self, task: TaskSpec, actions: list[Action],
                 world: World | None = None) -> tuple[World, list[dict[str, Any]]]:
        """Run the tool calls of ``actions`` on a fresh world (or on ``world``, changed in place):
        (final world, row changes)."""
        world = world if world is not None else self.build_world(task)
        before = world.snapshot()
        for a in actions:
            if a.kind == "tool_call":
                call_tool(world, a.tool, a.arguments, allowed=task.tools)
        return world, world.diff(before)

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        """The reference with one realistic wrong argument in its first write (or in finish's answer)."""
        return with_wrong_argument(task, actions, rng)

    def mistake(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        """The realistic wrong-argument slip of this task's variant (the gate's mutant, the policy's error)."""
        return self.hooks(variant_of(task.template)).wrong_argument(task, actions, rng)
