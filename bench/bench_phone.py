"""How fast the simulated phone is, single core: tool calls per second and the cost of a world.

Prints, side by side in one run:
- raw tool calls per second (``call_tool`` on a world, no harness),
- environment steps per second with the scripted policy (PhoneEnv: state delta, state
  hash and per-step verification on every step), and their ratio to the 5,000/s target,
- the cost of one world: build, copy, hash, snapshot, in microseconds.

Times are CPU time of this process (one core), so that other work on a shared machine
does not count against the phone. ``--quick`` runs a tiny smoke version (used by a
test so the script cannot rot).
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime

from generators.collect import run_episode
from generators.phone.env import PhoneEnv
from generators.phone.families import FAMILIES
from generators.phone.tools import call_tool
from generators.policies import ScriptedPolicy

TARGET = 5000  # tool calls per second on one core: the environment must never be the bottleneck


def _timed(fn, repeat: int) -> float:
    fn()  # warm: caches and first-call costs are not what is measured
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat


def bench(tasks_per_family: int, repeat: int) -> list[tuple[str, float, str]]:
    """Rows of (measure, value, unit)."""
    tasks = [f.make_task(seed, 1 + seed % 3) for f in FAMILIES.values() for seed in range(tasks_per_family)]
    policy = ScriptedPolicy(seed=1)
    calls = steps = 0
    step_seconds = 0.0
    start = time.process_time()
    for task in tasks:  # the loop of generators.collect.run_episode, with the steps timed apart from reset
        env = PhoneEnv(task, FAMILIES[task.family])
        env.reset()
        policy.start(task, 0)
        done, history = False, []
        while not done:
            action = policy.next_action(history)
            t0 = time.process_time()
            feedback, verification, done = env.step(action)
            step_seconds += time.process_time() - t0
            steps += 1
            calls += action.kind == "tool_call"
        env.evaluate()
    env_seconds = time.process_time() - start
    start = time.process_time()
    for task in tasks:
        run_episode(task, policy, rollout=0, round_id="bench", batch_id="bench", created_at=datetime(2026, 3, 1))
    record_seconds = time.process_time() - start

    raw_calls, raw_seconds = 0, 0.0
    for task in tasks:
        family = FAMILIES[task.family]
        world = family.build_world(task)
        actions = [a for a in family.reference_actions(task) if a.kind == "tool_call"]
        start = time.process_time()
        for _ in range(repeat):
            for a in actions:
                call_tool(world, a.tool, a.arguments, allowed=task.tools)
        raw_seconds += time.process_time() - start
        raw_calls += repeat * len(actions)

    family = FAMILIES["F06"]
    task = family.make_task(0, 3)
    world = family.build_world(task)
    rows = sum(len(t.rows) for t in world.tables.values())
    return [
        ("raw tool calls / s (call_tool)", raw_calls / raw_seconds, f"x{raw_calls / raw_seconds / TARGET:.1f} target"),
        ("env tool calls / s (PhoneEnv.step, verified)", calls / step_seconds,
         f"x{calls / step_seconds / TARGET:.1f} target"),
        ("env tool calls / s (with reset per episode)", calls / env_seconds,
         f"x{calls / env_seconds / TARGET:.1f} target; {steps / len(tasks):.1f} steps/episode"),
        ("episodes / s (run_episode, records built)", len(tasks) / record_seconds, f"{len(tasks)} episodes"),
        ("world build (us)", 1e6 * _timed(lambda: family.build_world(task), repeat), f"{rows} rows"),
        ("env reset, world cached (us)", 1e6 * _timed(PhoneEnv(task, family).reset, repeat), "a rollout's start"),
        ("world copy (us)", 1e6 * _timed(world.copy, repeat), ""),
        ("world hash (us)", 1e6 * _timed(world.state_hash, repeat), ""),
        ("world snapshot (us)", 1e6 * _timed(world.snapshot, repeat), ""),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny smoke run")
    args = parser.parse_args(argv)
    rows = bench(2 if args.quick else 40, 3 if args.quick else 50)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>12}  note")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12,.1f}  {note}")


if __name__ == "__main__":
    main()
