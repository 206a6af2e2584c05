"""flows.pipeline: a round, an eval and an import are declared stages, walked by one runner that
leaves out what is committed."""

from __future__ import annotations

from flows.pipeline import EVAL, IMPORT, ROUND, Run, Stage, walk


class _Committed:
    """A store that knows only which units are committed."""

    def __init__(self, done: dict[tuple[str, str], set[str]]) -> None:
        self.done = done

    def done_keys(self, run_id: str, table: str) -> set[str]:
        return self.done.get((run_id, table), set())


def test_the_runner_gives_each_stage_only_its_units_not_yet_committed():
    seen: list[tuple[str, list[str]]] = []
    stages = [
        Stage("a", reads=(), writes=("episodes",), units=lambda run: ["s0", "s1", "s2"],
              work=lambda run, todo: seen.append(("a", todo)) or len(todo)),
        Stage("b", reads=("episodes",), writes=("marks",), units=lambda run: ["m"],
              work=lambda run, todo: seen.append(("b", todo))),
    ]
    run = walk(stages, Run(_Committed({("r1", "episodes"): {"s1"}, ("r1", "marks"): {"m"}}), None, run_id="r1"))
    assert seen == [("a", ["s0", "s2"]), ("b", [])]  # a stage with nothing left is still called: it may report
    assert run.units["a"] == ["s0", "s1", "s2"] and run.todo["a"] == ["s0", "s2"] and run.out["a"] == 2


def test_every_kind_of_run_is_a_list_of_named_stages_that_say_what_they_write():
    assert [s.name for s in ROUND] == ["plan", "write", "collect", "curate", "finish"]
    assert [s.name for s in EVAL] == ["plan-eval", "write", "collect", "record"]
    assert [s.name for s in IMPORT] == ["import", "curate"]
    assert IMPORT[-1] is ROUND[3]  # an import is curated by the round's own stage
    for stage in (*ROUND, *EVAL, *IMPORT):
        assert stage.writes or stage.committed is not None, stage.name  # how the runner knows what is done
