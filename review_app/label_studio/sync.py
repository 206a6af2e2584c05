"""Push the review queue to Label Studio and pull its annotations back as review decisions.

Push: the project (created, or its labeling config restored), then every selected episode
not yet a task (keyed by the episode id in the task data, as Label Studio lists it, so a
rerun after a crash creates nothing twice), and the tasks whose content changed.

Pull: everything is read from Label Studio and checked first; only then is it written, in
one transaction, so a failure midway leaves the state database as it was and the rerun
completes. An annotation is applied once per (id, update time): a new or edited one
appends the reviewer's decision, a deleted one appends ``withdrawn``. A Label Studio user's
annotations count as the reviewer whose account holds that user's full e-mail
(``flywheel reviewer set NAME --email ADDRESS``); a user no account holds is refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlmodel import Session, select

from curation.routing import CHECK as ROUTING_CHECK
from review_app.data import warehouse_cursor
from review_app.decisions import WITHDRAWN, format_reason
from review_app.episode import EpisodeView
from review_app.final import final_decisions
from review_app.label_studio import config
from review_app.label_studio.annotations import PulledDecision, parse_result
from review_app.label_studio.client import LabelStudioClient, LabelStudioError, RemoteProject, RemoteTask, RemoteUser
from review_app.label_studio.tasks import task_payload
from warehouse import killpoints, state
from warehouse import label_studio_tables as lt
from warehouse import review_tables as rt
from warehouse.errors import InputError, one_line
from warehouse.query import iter_records
from warehouse.settings import LabelStudioSettings
from warehouse.store import Store

Progress = Callable[[int], None]


# --- the project --------------------------------------------------------------------


def ensure_project(client: LabelStudioClient, title: str) -> tuple[RemoteProject, bool]:
    """The project (created if missing) with our labeling config; True if the config was restored."""
    want = config.label_config()
    project = client.find_project(title)
    if project is None:
        return client.create_project(title, want), False
    if project.label_config.strip() != want:
        client.set_label_config(project.id, want)
        return RemoteProject(project.id, project.title, want), True
    return project, False


def existing_project(client: LabelStudioClient, title: str) -> RemoteProject:
    """The project, which must exist and still carry a config whose answers can be read."""
    project = client.find_project(title)
    if project is None:
        raise LabelStudioError(f"no Label Studio project {title!r}; run `flywheel label-studio push` first")
    problem = config.config_problem(project.label_config)
    if problem:
        raise LabelStudioError(f"project {title!r} (id {project.id}) was edited by hand: {problem}; nothing was "
                               "pulled (`flywheel label-studio push` restores the config)")
    return project


# --- push ---------------------------------------------------------------------------


@dataclass
class PushSummary:
    project_id: int = 0
    selected: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    config_restored: bool = False


def episodes_to_push(store: Store, round_ids: list[str] | None, *, everything: bool) -> list[str]:
    """Episode ids of ``round_ids`` (None: every round) that curation routed to people, or all of them."""
    con = warehouse_cursor(store, round_ids)
    if everything:
        sql = "SELECT episode_id FROM episodes ORDER BY 1"
    else:
        sql = f"SELECT DISTINCT episode_id FROM marks WHERE \"check\" = '{ROUTING_CHECK}' AND NOT passed ORDER BY 1"
    return [r[0] for r in con.execute(sql).fetchall()]


def load_views(store: Store, round_ids: list[str] | None, episode_ids: list[str]) -> list[EpisodeView]:
    """The episodes with their tasks, steps, outcomes and marks, read in one query per table."""
    con = warehouse_cursor(store, round_ids)
    where, params = "episode_id IN (SELECT unnest(?::VARCHAR[]))", [episode_ids]
    eps = list(iter_records(con, "episodes", where, params))
    tasks = {t.task_id: t for t in iter_records(con, "tasks", "task_id IN (SELECT unnest(?::VARCHAR[]))",
                                                [sorted({e.task_id for e in eps})])}
    steps: dict[str, list] = {}
    for s in iter_records(con, "steps", where, params):
        steps.setdefault(s.episode_id, []).append(s)
    outcomes = {o.episode_id: o for o in iter_records(con, "outcomes", where, params)}
    marks: dict[str, list] = {}
    for m in iter_records(con, "marks", where, params):
        marks.setdefault(m.episode_id, []).append(m)
    return [EpisodeView(e, tasks.get(e.task_id), sorted(steps.get(e.episode_id, []), key=lambda s: s.index),
                        outcomes.get(e.episode_id), marks.get(e.episode_id, [])) for e in eps]


def _record_tasks(store: Store, project_id: int, remote: list[RemoteTask]) -> None:
    with store.session() as s:
        have = lt.project_tasks(session=s, project_id=project_id)
        for t in remote:
            row = have.get(t.episode_id)
            digest, rid = str(t.data.get("digest", "")), str(t.data.get("round_id", ""))
            if row is None:
                s.add(lt.LabelStudioTask(project_id=project_id, episode_id=t.episode_id, task_id=t.id, round_id=rid,
                                         digest=digest))
            elif (row.task_id, row.digest) != (t.id, digest):
                row.task_id, row.digest = t.id, digest
                s.add(row)
        s.commit()


def push(
    store: Store, client: LabelStudioClient, ls: LabelStudioSettings, *, round_ids: list[str] | None,
    everything: bool = False, progress: Progress | None = None,
) -> PushSummary:
    """Create or update the project's tasks for the selected episodes."""
    project, restored = ensure_project(client, ls.project)
    summary = PushSummary(project.id, config_restored=restored)
    wanted = episodes_to_push(store, round_ids, everything=everything)
    summary.selected = len(wanted)
    remote = {t.episode_id: t for t in client.tasks(project.id, annotations=False) if t.episode_id}
    for start in range(0, len(wanted), ls.page_size):
        chunk = wanted[start:start + ls.page_size]
        new, changed = [], []
        for view in load_views(store, round_ids, chunk):
            payload = task_payload(view, ls.screens_url)
            have = remote.get(view.episode.episode_id)
            if have is None:
                new.append(payload)
            elif have.data.get("digest") != payload["data"]["digest"]:
                changed.append((have.id, payload))
        if new:
            client.import_tasks(project.id, new)
        for task_id, payload in changed:
            client.update_task(project.id, task_id, payload)
        summary.created += len(new)
        summary.updated += len(changed)
        summary.unchanged += len(chunk) - len(new) - len(changed)
        if progress:
            progress(len(chunk))
    if summary.created or summary.updated or len(remote) != _known_tasks(store, project.id):
        _record_tasks(store, project.id, list(client.tasks(project.id, annotations=False)))
    return summary


def _known_tasks(store: Store, project_id: int) -> int:
    with store.session() as s:
        return len(lt.project_tasks(session=s, project_id=project_id))


# --- pull ---------------------------------------------------------------------------


@dataclass
class PullSummary:
    project_id: int = 0
    tasks: int = 0
    annotations: int = 0
    new: int = 0  # decisions from annotations seen for the first time
    edited: int = 0  # decisions from annotations changed since the last pull
    withdrawn: int = 0  # annotations deleted in Label Studio
    undecided: int = 0  # annotations without a decision yet (skipped, or no decision chosen)
    unchanged: int = 0
    foreign: int = 0  # tasks whose episode is not in the warehouse (not pulled)
    reviewers_created: list[str] = field(default_factory=list)  # always empty: accounts are never made here


def reviewer_names(users: list[RemoteUser], by_email: dict[str, str]) -> dict[int, str]:
    """Each Label Studio user's reviewer: the account whose stored e-mail (``by_email``: address ->
    reviewer) is the user's full address, compared in lower case. Users with no such account are
    left out: their annotations are refused, never given a look-alike account."""
    out = {}
    for user in users:
        name = by_email.get((user.email or "").strip().lower())
        if name:
            out[user.id] = name
    return out


def accounts_by_email(store: Store) -> dict[str, str]:
    """Every account's Label Studio e-mail (lower case) -> its name."""
    with store.session() as s:
        return {r.email: r.name for r in rt.list_reviewers(session=s) if r.email}


def _where(task: RemoteTask, ann_id: int, who: str) -> str:
    return f"task {task.id} (episode {task.episode_id}), annotation {ann_id} by {who}"


@dataclass
class _Planned:
    task: RemoteTask
    annotation_id: int
    updated_at: str
    reviewer: str
    decision: PulledDecision | None
    round_id: str = ""
    user_id: int = 0  # the episode's round in the warehouse (never what the task's data claims)


def _fetch(client: LabelStudioClient, project: RemoteProject, progress: Progress | None) -> Iterator[RemoteTask]:
    for task in client.tasks(project.id, annotations=True):
        if progress:
            progress(1)
        yield task


def known_episodes(store: Store) -> dict[str, tuple[str, int]]:
    """Every episode of the warehouse: its round and how many steps it has."""
    con = warehouse_cursor(store, None)
    rows = con.execute("SELECT e.episode_id, e.round_id, coalesce(o.steps, 0) FROM episodes e "
                       "LEFT JOIN outcomes o USING (episode_id)").fetchall()
    return {eid: (rid, int(n)) for eid, rid, n in rows}


def plan_pull(
    tasks: list[RemoteTask], users: dict[int, RemoteUser], known: dict[str, tuple[str, int]],
    names: dict[int, str] | None = None,
) -> tuple[list[_Planned], int]:
    """Every annotation as a checked decision (or none yet), and how many tasks are not ours.
    ``known``: episode id -> (round, steps) from the warehouse; a task's data is trusted for its
    episode id only; ``names``: user id -> reviewer (:func:`reviewer_names`). InputError naming the
    first Label Studio user with no account of that e-mail, or else the first annotation that cannot
    be read, and how many more."""
    names = names if names is not None else {}
    planned, problems, strangers, foreign = [], [], [], 0
    for task in tasks:
        if task.episode_id not in known:
            foreign += 1
            continue
        round_id, n_steps = known[task.episode_id]
        for ann in task.annotations:
            user = users.get(ann.user_id) if ann.user_id is not None else None
            who = user.email if user else f"user {ann.user_id}"
            if user is None:
                problems.append(f"{_where(task, ann.id, who)}: no such Label Studio user")
                continue
            if user.id not in names:
                strangers.append((user, task, ann.id))
                continue
            try:
                decision = None if ann.cancelled else parse_result(ann.result, n_steps)
            except InputError as exc:
                problems.append(f"{_where(task, ann.id, who)}: {exc}")
                continue
            planned.append(_Planned(task, ann.id, ann.updated_at, names[user.id], decision, round_id, user.id))
    if strangers:
        user, task, ann_id = strangers[0]
        others = len({u.id for u, _, _ in strangers}) - 1
        more = f" (and {others} more Label Studio user(s))" if others else ""
        address = one_line(user.email or user.username or f"user {user.id}", 120)
        raise InputError(f"Label Studio user {address!r} (annotation {ann_id} on task {task.id}) has no reviewer "
                         f"account with that e-mail{more}; nothing was pulled; link it with: "
                         f"flywheel reviewer set NAME --email {address}")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(f"{problems[0]}{more}; nothing was pulled; fix it in Label Studio and pull again")
    return planned, foreign


def _check_active(s: Session, names: set[str]) -> None:
    for name in sorted(names):
        row = rt.get_reviewer(session=s, name=name)
        if row is not None and not row.active:
            raise InputError(f"reviewer {name!r} (from Label Studio) is inactive; nothing was pulled")


def _review(p: _Planned, decision: str, d: PulledDecision | None) -> state.Review:
    return state.Review(
        episode_id=p.task.episode_id, round_id=p.round_id, reviewer=p.reviewer,
        decision=decision, reason=format_reason(d.reason_code, d.reason_text) if d else "",
        first_wrong_step=d.first_wrong_step if d else None, recovered=d.recovered if d else False,
    )


def pull(
    store: Store, client: LabelStudioClient, ls: LabelStudioSettings, *, progress: Progress | None = None
) -> PullSummary:
    """Annotations to review decisions, all or nothing."""
    project = existing_project(client, ls.project)
    users = {u.id: u for u in client.users()}
    tasks = list(_fetch(client, project, progress))  # everything is read before anything is written
    with store.session() as s:
        user_links = lt.user_links(session=s)
    names = reviewer_names(list(users.values()), accounts_by_email(store))
    planned, foreign = plan_pull(tasks, users, known_episodes(store), names)
    summary = PullSummary(project.id, len(tasks), len(planned), foreign=foreign)
    with store.session() as s:
        links = lt.project_annotations(session=s, project_id=project.id)
        for uid in sorted({p.user_id for p in planned} - set(user_links)):  # who was seen, for the record
            s.add(lt.LabelStudioUser(user_id=uid, reviewer=names[uid], email=users[uid].email))
        _check_active(s, {p.reviewer for p in planned if p.decision is not None})
        seen = set()
        for p in planned:
            seen.add(p.annotation_id)
            link = links.get(p.annotation_id)
            if link is not None and link.updated_at == p.updated_at:
                summary.unchanged += 1
                continue
            review_id = None
            if p.decision is not None:
                review = _review(p, p.decision.decision, p.decision)
                s.add(review)
                s.flush()
                review_id = review.id
                summary.edited += link is not None
                summary.new += link is None
            else:
                summary.undecided += 1
                if link is not None and link.review_id is not None:  # the decision was taken back
                    s.add(_review(p, WITHDRAWN, None))
                    summary.withdrawn += 1
            if link is None:
                link = lt.LabelStudioAnnotation(annotation_id=p.annotation_id, project_id=project.id,
                                                task_id=p.task.id, episode_id=p.task.episode_id,
                                                reviewer=p.reviewer, updated_at=p.updated_at)
            link.updated_at, link.review_id, link.reviewer = p.updated_at, review_id, p.reviewer
            s.add(link)
        for aid, link in links.items():  # deleted in Label Studio since the last pull
            if aid in seen:
                continue
            if link.review_id is not None:
                s.add(state.Review(episode_id=link.episode_id, round_id=_round_of(s, link.review_id),
                                   reviewer=link.reviewer, decision=WITHDRAWN))
                summary.withdrawn += 1
            s.delete(link)
        killpoints.reached("pull.planned")  # everything staged, nothing committed yet
        s.commit()
    return summary


def _round_of(s: Session, review_id: int) -> str:
    review = s.get(state.Review, review_id)
    return review.round_id if review else ""


# --- differences --------------------------------------------------------------------


@dataclass
class Difference:
    kind: str  # missing_in_label_studio, not_in_warehouse, decided_only_here, counts_otherwise
    episode_id: str
    detail: str = ""


def differences(store: Store, client: LabelStudioClient, ls: LabelStudioSettings, overlap) -> list[Difference]:
    """Where Label Studio and the state database tell different stories, after a sync."""
    project = existing_project(client, ls.project)
    tasks = list(client.tasks(project.id, annotations=True))
    known = {r[0] for r in warehouse_cursor(store, None).execute("SELECT episode_id FROM episodes").fetchall()}
    with store.session() as s:
        pushed = lt.project_tasks(session=s, project_id=project.id)
        links = lt.project_annotations(session=s, project_id=project.id)
        reviews = {r.id: r for r in s.exec(select(state.Review).where(
            state.Review.id.in_([link.review_id for link in links.values() if link.review_id])))}
    finals = final_decisions(store, None, overlap)
    remote = {t.episode_id: t for t in tasks}
    out = [Difference("missing_in_label_studio", eid, f"task {row.task_id} is gone")
           for eid, row in sorted(pushed.items()) if eid not in remote]
    for eid, task in sorted(remote.items()):
        if eid not in known:
            out.append(Difference("not_in_warehouse", eid or f"task {task.id}", f"task {task.id}"))
            continue
        final = finals.get(eid)
        ls_votes = {links[a.id].reviewer: reviews[links[a.id].review_id].decision for a in task.annotations
                    if a.id in links and links[a.id].review_id in reviews}
        if not ls_votes and final is not None and final.decision:
            out.append(Difference("decided_only_here", eid, f"{final.decision} by {final.reviewer}"))
        elif ls_votes and final is not None and final.decision and set(ls_votes.values()) != {final.decision}:
            votes = ", ".join(f"{who}: {d}" for who, d in sorted(ls_votes.items()))
            out.append(Difference("counts_otherwise", eid, f"Label Studio says {votes}; {final.status} as "
                                                           f"{final.decision}"))
    return out
