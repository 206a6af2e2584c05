"""The state hashes of fixed tasks' worlds, as built and after the reference solution.

A world is a pure function of its task: episodes recorded today must replay tomorrow, so a change
that makes the phone faster must not move one row. ``tests/data/world_hashes.json`` pins them;
after a deliberate change to what worlds hold (which needs a new ``ENV_VERSION``), rewrite it:

    python -m tests.world_hashes --write
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from generators.phone.env import replay_actions
from generators.phone.families import FAMILIES, Family
from warehouse.contract import Action, TaskSpec

PATH = Path(__file__).parent / "data" / "world_hashes.json"
SEEDS = (1, 2, 7, 31, 404)


def replay_final_hash(task: TaskSpec, actions: list[Action], family: Family) -> str:
    """The final state hash after re-executing ``actions`` in a fresh world of ``task``: what the replay
    check (``curation.replay``) compares a recorded episode's final hash with."""
    world = family.build_world(task)
    replay_actions(task, actions, world)
    return world.state_hash()


def world_hashes() -> dict[str, list[str]]:
    """{task id: [initial state hash, state hash after the reference actions]} for every family,
    a few seeds and every difficulty."""
    out = {}
    for fid in sorted(FAMILIES):
        family = FAMILIES[fid]
        for seed in SEEDS:
            for difficulty in (1, 2, 3):
                task = family.make_task(seed, difficulty)
                out[task.task_id] = [family.build_world(task).state_hash(),
                                     replay_final_hash(task, family.reference_actions(task), family)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {PATH.name} from the phone as it is")
    args = ap.parse_args(argv)
    hashes = world_hashes()
    if args.write:
        PATH.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(hashes)} tasks' hashes to {PATH}")
    else:
        pinned = json.loads(PATH.read_text())
        moved = sorted(t for t in hashes if pinned.get(t) != hashes[t])
        print(f"{len(moved)} of {len(hashes)} tasks' worlds moved" + (f": {', '.join(moved[:5])}" if moved else ""))
        return 1 if moved else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
