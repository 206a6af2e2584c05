"""Per-step verification that re-evaluates only what a step could have changed.

Gives exactly the verification of :class:`generators.phone.verifier.StepVerifier` (the
definition, which re-runs every check over the whole state diff), from what each check reads:

- a state check of one table (``state_diff``, ``untouched``) re-runs when that table's rows
  moved since it last ran, ``allowed_changes`` when any table's did; both only on a step whose
  state delta is not empty, as in the definition;
- every other check reads the calls and the finish arguments, so it re-runs when a call was
  recorded or the episode finished (calls are only ever appended);
- the changes since the start are kept per table and re-diffed only for the tables that moved.

tests/test_phone_incremental.py runs both side by side on random trajectories of every family.
"""

from __future__ import annotations

from itertools import compress
from typing import Any

from generators.phone.stepplan import VerifierPlan
from generators.phone.trusted import trusted
from generators.phone.verifier import Calls, SeenCalls, step_label, verifiable
from generators.phone.world import Snapshot, Table, row_change, row_json
from warehouse.contract import Action, Feedback, TaskSpec, Verification


class LazySeenCalls(SeenCalls):
    """:class:`SeenCalls` that encodes arguments only once their tool is called a second time
    (most calls of an episode are to a tool not called before)."""

    def __init__(self) -> None:
        self.by_tool: dict[Any, list[list[Any]]] = {}  # tool -> [[arguments, their JSON or None]]

    def repeated(self, tool: str | None, arguments: Any) -> bool:
        """Whether this call was made before; it counts as made from now on."""
        seen = self.by_tool.get(tool)
        if seen is None:
            self.by_tool[tool] = [[arguments, None]]
            return False
        key = row_json(arguments)
        for entry in seen:
            if entry[1] is None:
                entry[1] = row_json(entry[0])
            if entry[1] == key:
                return True
        seen.append([arguments, key])
        return False


class IncrementalVerifier:
    """Milestones reached, minefields hit, running progress and label of each step, incrementally.

    ``initial`` is the snapshot the episode started from and ``tables`` the live world's tables;
    :meth:`observe` is told which rows of which tables moved in the step (in any field)."""

    def __init__(self, task: TaskSpec, initial: Snapshot, tables: dict[str, Table], plan: VerifierPlan | None = None):
        self.task, self.initial, self.tables = verifiable(task), initial, tables
        p = plan if plan is not None else VerifierPlan(task.requirements)
        self.reqs, self.ids, self.weights, self.total, self.hard = p.reqs, p.ids, p.weights, p.total, p.hard
        self.hard_ids, self.noop, self.state, self.other = p.hard_ids, p.noop, p.state, p.other
        self.by_tool, self.any_call, self.settles, self.forbidden = p.by_tool, p.any_call, p.settles, p.forbidden
        self.reads_finish, self.checks = p.reads_finish, p.checks
        self.reads, self.source = p.reads, p.source
        self.changes: dict[str, list[dict[str, Any]]] = {}  # per table, its changes since the start
        self.entries: dict[str, dict[str, dict[str, Any]]] = {}  # the same, by table and key
        self.stale: dict[str, set[str]] = {}  # per table, the rows moved since they were last diffed
        self.version: dict[str, int] = {}  # per table, how many steps moved its rows
        self.moves = 0  # steps that moved any table's rows
        self.seen = dict.fromkeys(self.state, 0)  # the version each state check last ran at
        # at the start nothing has changed and nothing was called: the plan's verdicts
        self.own, self.flags, self.passing = list(p.own), list(p.flags), set(p.passing)
        self.calls_seen, self.finish_seen = 0, None
        self.mines_now = self._mines()
        self.progress = self._progress(self.mines_now)
        self.mines: set[str] = set()
        self.seen_calls = LazySeenCalls()

    def _mines(self) -> list[str]:
        return [self.ids[i] for i in self.forbidden if not self.flags[i]]  # a forbidden check fails on a hit

    def _progress(self, mines: list[str]) -> float:
        if not self.total:
            return float(all(self.flags[i] for i in self.hard) and not mines)
        return round(sum(compress(self.weights, self.flags)) / self.total, 6)  # the passing weights, in order

    def _changes_of(self, name: str) -> list[dict[str, Any]]:
        """Table ``name``'s changes since the start (sorted by key), its moved rows re-diffed first."""
        keys = self.stale.pop(name, None)
        if keys:
            t = self.tables[name]
            start, now = self.initial[name], self.after[name]
            entries = self.entries.setdefault(name, {})
            skip, unordered = t.incidental, t if t.unordered else None
            for key in keys:  # each row's change from the start, as the whole table's diff would give it
                change = row_change(name, key, start.get(key), now.get(key), skip, unordered)
                if change is not None:
                    entries[key] = change
                else:
                    entries.pop(key, None)
            if entries:
                self.changes[name] = [entries[k] for k in sorted(entries)]
            else:
                self.changes.pop(name, None)
        return self.changes.get(name, [])

    def _state_checks(self, calls: Calls, finish_args: dict[str, Any] | None) -> bool:
        changed = False
        for i in self.state:
            table = self.reads[i]
            version = self.moves if table is None else self.version.get(table, 0)
            if version == self.seen[i]:
                continue
            if table is None:
                for name in list(self.stale):
                    self._changes_of(name)
                changes = [c for name in sorted(self.changes) for c in self.changes[name]]
            else:
                changes = self._changes_of(table)
            check, params = self.checks[i]  # as check_verdict asks it
            self.own[i] = check is not None and check(params, changes=changes, calls=calls, finish_args=finish_args,
                                                      brief=True)[0]
            self.seen[i] = version
        own, flags, source = self.own, self.flags, self.source
        for i in self.state:
            flag = own[source[i]]
            if flag != flags[i]:
                flags[i], changed = flag, True
        return changed

    def _call_checks(self, calls: Calls, finish_args: dict[str, Any] | None) -> bool:
        rerun: Any = []
        flags = self.flags
        if len(calls) != self.calls_seen:  # the checks that read a call that came
            after = finish_args is not None
            by_tool, came = self.by_tool[after], self.any_call[after]
            for c in calls[self.calls_seen:]:
                hits = by_tool.get(c["tool"])
                if hits:
                    came = [*came, *hits]
            if came:  # each once (their order does not matter: each check sets its own flag)
                settles = self.settles
                rerun = [i for i in set(came) if settles[i] != flags[i]]
        if finish_args is not self.finish_seen:  # and those that read the finish arguments
            rerun = self.reads_finish if not rerun else sorted({*rerun, *self.reads_finish})
        self.calls_seen, self.finish_seen = len(calls), finish_args
        changed = False
        checks = self.checks
        for i in rerun:  # the definition gives these no changes during the episode (as check_verdict asks them)
            check, params = checks[i]
            flag = check is not None and check(params, changes=[], calls=calls, finish_args=finish_args, brief=True)[0]
            if flag != flags[i]:
                flags[i], changed = flag, True
        return changed

    def observe(self, calls: Calls, action: Action, feedback: Feedback, finish_args: dict[str, Any] | None,
                after: Snapshot, moved: dict[str, list[str]]) -> Verification:
        """Verify the step just taken: ``calls`` already includes it, ``after`` is the snapshot now (kept
        until the next step) and ``moved`` gives, per table, the rows the step changed in any field."""
        self.after = after
        if moved:
            self.moves += 1
            for name, keys in moved.items():
                self.version[name] = self.version.get(name, 0) + 1
                self.stale.setdefault(name, set()).update(keys)
        changed = False
        if feedback.state_delta:  # the definition re-runs state checks only when the state moved
            changed = self._state_checks(calls, finish_args)
        if len(calls) != self.calls_seen or finish_args is not self.finish_seen:
            changed = self._call_checks(calls, finish_args) or changed
        new_milestones: list[str] = []
        harmful = False
        if changed:
            mines = self.mines_now = self._mines()
            self.progress = self._progress(mines)
            passing = set(compress(self.ids, self.flags))
            new_milestones = sorted(passing - self.passing - self.noop)
            harmful = bool(self.hard_ids & (self.passing - passing))  # a hard requirement lost
            self.passing = passing
        new_mines = sorted(set(self.mines_now) - self.mines) if self.mines_now else []
        if new_mines:
            self.mines.update(new_mines)
        label = step_label(self.seen_calls, action, feedback, new_milestones, harmful or bool(new_mines))
        return trusted(Verification, milestones=new_milestones, minefields=new_mines, progress=self.progress,
                       label=label)
