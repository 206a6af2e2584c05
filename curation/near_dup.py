"""Cascade step 4b: near duplicates by MinHash + LSH, clusters, keep the hardest.

Each episode is two shingle sets: its near-call signatures (tool and normalised
arguments, as a *set*, so independent calls made in another order look the same) and
the character 5-grams of its normalised instruction. LSH over the call signatures
proposes candidates; a candidate pair is a near duplicate when

    action_weight * J(calls) + (1 - action_weight) * S(instruction) >= threshold,

J(calls) estimated from the signatures, S(instruction) = 1 when the two instructions are
one meaning (:mod:`curation.semantic`: same family, embedding cosine >= the semantic
threshold, anchors agree), else their character-gram Jaccard. Calls carry most of the
weight because a paraphrase changes the wording and keeps the calls, while two distinct
tasks of one template share most of the wording and differ in an argument.

When the calls carry little signal (neither episode made a tool call with arguments: only
finish, ask_user or argument-less reads), the instruction decides: two such episodes with
the same calls (the same finish answer) are near duplicates only when their instructions
are one meaning, or their character-gram Jaccard passes the threshold and their anchors
agree. "How many events on Saturday?" and "How many contacts work at Hooli?", both
answered ``finish(answer=3)``, are not duplicates.

A near miss stays apart from what it nearly matches: when both episodes' tasks state their
values (a generated task's public parameters: the label, the day, the settings to change) and
those differ, the two are different tasks whatever their calls and words say. "Move my Lunch with
Sam tomorrow to 15:00" and "... to 11:00", infeasible both, make the same calls; a meeting setup
with one more setting to change makes four of the other's five calls. Without stated values (an
imported conversation) the calls and the instruction decide as above.

Rollouts of the same task are never paired here (choosing among them is the cost-aware
selection's job), nor a success with a failure (failures are evidence). Clusters are the
connected components of verified pairs; the hardest member (highest difficulty, then
lowest success rate of its task, then most steps, then smallest id) is kept and every
other member points to it by its stable episode id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from curation.marking import marks_frame
from curation.minhash import MinHasher, band_keys, char_ngram_hashes, optimal_bands, shingle_hash
from curation.semantic import Embed, Statement, anchors, anchors_agree, same_meaning, statement
from curation.signatures import normalise_instruction
from warehouse.parallel import map_chunks

CHECK = "near_duplicate"


@dataclass(frozen=True)
class NearDupConfig:
    threshold: float = 0.8
    action_weight: float = 0.8
    num_perm: int = 128
    ngram: int = 5
    semantic_threshold: float = 0.6  # embedding cosine for "one meaning" (with agreeing anchors)
    max_group: int = 2000  # low-signal episodes with the same calls compared all-pairs up to this many

    @property
    def lsh_threshold(self) -> float:
        """The call-Jaccard below which no pair can reach ``threshold``, less a margin."""
        floor = (self.threshold - (1.0 - self.action_weight)) / self.action_weight
        return max(0.3, floor - 0.1)

    def bands(self) -> tuple[int, int]:
        return optimal_bands(self.lsh_threshold, self.num_perm)


# From this many episodes, a round on a Dask cluster searches the LSH bands on the cluster's
# workers (a band each); below it, shipping the band columns costs more than the search.
BANDS_SPREAD_FROM = 200_000


def _band_pairs(columns: list[np.ndarray]) -> list[np.ndarray]:
    """Per band (one column of bucket keys), the pairs that share a bucket, each ``i * n + j`` (i < j,
    sorted, once): neighbours in bucket order plus each member with its bucket's first (enough to
    connect every bucket)."""
    out = []
    for column in columns:
        n = len(column)
        pos = np.arange(n)
        order = np.argsort(column, kind="stable")
        k = column[order]
        same_as_prev = np.r_[False, k[1:] == k[:-1]]
        members = np.flatnonzero(same_as_prev)
        group_start = np.maximum.accumulate(np.where(~same_as_prev, pos, 0))
        far = members[members - 1 != group_start[members]]
        a = np.concatenate([order[members - 1], order[group_start[far]]]).astype(np.int64)  # chain, then star
        b = np.concatenate([order[members], order[far]]).astype(np.int64)
        out.append(np.unique(np.minimum(a, b) * n + np.maximum(a, b)))
    return out


def _candidate_pairs(keys: np.ndarray, executor: Executor | None = None) -> np.ndarray:
    """(i, j) pairs, i < j, that share a bucket in any band (searched band by band, on
    ``executor``'s workers for a large round). The bands' pairs are merged one band at a time:
    most repeat from band to band, so the merged set stays near one band's size."""
    n, bands = keys.shape
    columns = [np.ascontiguousarray(keys[:, b]) for b in range(bands)]
    out = map_chunks(_band_pairs, columns, workers=1, chunk=1, least=2,
                     executor=executor if n >= BANDS_SPREAD_FROM else None)
    pairs = np.zeros(0, dtype=np.int64)
    while out:
        pairs = np.union1d(pairs, out.pop())
    return np.stack([pairs // n, pairs % n], axis=1)


def _similarity(sig: np.ndarray | InstructionSignatures, pairs: np.ndarray, chunk: int = 200_000) -> np.ndarray:
    out = np.empty(len(pairs))
    for s in range(0, len(pairs), chunk):
        p = pairs[s : s + chunk]
        out[s : s + chunk] = (sig[p[:, 0]] == sig[p[:, 1]]).mean(axis=1)
    return out


def _components(n: int, pairs: np.ndarray) -> np.ndarray:
    parent = np.arange(n)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs.tolist():
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(i) for i in range(n)])


@dataclass
class CallSignatures:
    """Per episode row: the MinHash signature of its near calls (a *set*), whether it made any call, and
    whether any is ``informative`` (a tool call with arguments: its calls say what the task was). An
    episode's signature depends on its own steps alone, so a large round's are made a chunk of
    episodes at a time and put together (:meth:`put`, :meth:`take`, :meth:`concat`)."""

    sig: np.ndarray  # (episodes, num_perm) uint32
    has_calls: np.ndarray
    informative: np.ndarray

    @classmethod
    def of(cls, episodes: pd.DataFrame, steps: pd.DataFrame, near_calls: pd.Series, num_perm: int) -> CallSignatures:
        """The signatures of ``episodes`` from their ``steps`` (``near_calls`` beside them), both ordered
        by episode id."""
        pos = pd.Index(episodes["episode_id"]).get_indexer(steps["episode_id"])
        keep = (pos >= 0) & near_calls.notna().to_numpy()
        owner = pos[keep]
        texts = near_calls.to_numpy()[keep]
        codes, distinct = pd.factorize(texts)  # rollouts repeat calls: each distinct one is hashed once
        sig = MinHasher(num_perm).signatures(shingle_hash(distinct.tolist())[codes], owner, len(episodes))
        has_calls = np.zeros(len(episodes), dtype=bool)
        has_calls[owner] = True
        tool_with_args = np.array([t.startswith("[") and not t.startswith('["finish",') and not t.endswith(",{}]")
                                   for t in texts.tolist()], dtype=bool)
        informative = np.zeros(len(episodes), dtype=bool)
        informative[owner[tool_with_args]] = True
        return cls(sig, has_calls, informative)

    @classmethod
    def empty(cls, n: int, num_perm: int) -> CallSignatures:
        """``n`` rows to :meth:`put` parts into."""
        return cls(np.full((n, num_perm), np.iinfo(np.uint32).max, dtype=np.uint32),
                   np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))

    def put(self, rows: np.ndarray, part: CallSignatures) -> None:
        """``part``'s rows at ``rows`` of these."""
        self.sig[rows], self.has_calls[rows], self.informative[rows] = part.sig, part.has_calls, part.informative

    def take(self, rows: np.ndarray) -> CallSignatures:
        return CallSignatures(self.sig[rows], self.has_calls[rows], self.informative[rows])

    @staticmethod
    def concat(parts: list[CallSignatures]) -> CallSignatures:
        return CallSignatures(*(np.concatenate([getattr(p, f) for p in parts])
                                for f in ("sig", "has_calls", "informative")))


class InstructionSignatures:
    """The MinHash signatures of the episodes' instructions (character n-grams), indexed by episode row
    like an array, each distinct instruction's made the first time a row asks for it: only episodes
    in a candidate pair are compared by instruction, and most are in none."""

    def __init__(self, episodes: pd.DataFrame, hasher: MinHasher, ngram: int):
        # by the text as written: texts normalised alike get equal signatures either way
        self.codes, distinct = pd.factorize(episodes["instruction"].fillna(""))
        self.texts = list(distinct)
        self.hasher, self.ngram = hasher, ngram
        self.slot = np.full(len(self.texts), -1, dtype=np.int64)  # a text's row in ``sig`` once made
        self.sig = np.empty((0, hasher.num_perm), dtype=np.uint32)

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        codes = self.codes[rows]
        need = np.unique(codes[self.slot[codes] < 0])
        if len(need):
            grams, owner = char_ngram_hashes([normalise_instruction(self.texts[i]) for i in need.tolist()], self.ngram)
            self.slot[need] = np.arange(len(self.sig), len(self.sig) + len(need))
            self.sig = np.concatenate([self.sig, self.hasher.signatures(grams, owner, len(need))])
        return self.sig[self.slot[codes]]


class _Meaning:
    """Same-meaning decisions for pairs, embedding the instructions of a block of pairs at a time (a
    large round's vectors at once would not fit in memory)."""

    BLOCK = 100_000  # pairs

    def __init__(self, episodes: pd.DataFrame, embed: Embed | None, threshold: float):
        self.instructions = episodes["instruction"].to_numpy()
        fam = episodes["family"] if "family" in episodes else pd.Series([""] * len(episodes))
        self.families = fam.fillna("").astype(str).to_numpy()
        self.embed, self.threshold = embed, threshold
        self.statements: dict[int, Statement] = {}

    def text(self, i: int) -> str:
        """Episode row ``i``'s instruction ("" when it has none)."""
        t = self.instructions[i]
        return t if isinstance(t, str) else ""

    def __call__(self, pairs: np.ndarray) -> np.ndarray:
        if self.embed is None or not len(pairs):
            return np.zeros(len(pairs), dtype=bool)
        return np.concatenate([self._block(pairs[s : s + self.BLOCK]) for s in range(0, len(pairs), self.BLOCK)])

    def _block(self, pairs: np.ndarray) -> np.ndarray:
        needed = np.unique(pairs.ravel())
        texts = [self.text(i) for i in needed.tolist()]
        codes, distinct = pd.factorize(pd.Series(texts, dtype=object))  # each distinct text embedded once
        vec = self.embed(list(distinct))[codes]
        local = np.searchsorted(needed, pairs)
        return same_meaning(texts, self.families[needed].tolist(), vec, local, self.threshold)

    def anchors_ok(self, pairs: np.ndarray) -> np.ndarray:
        """Per pair: the instructions state the same values (their anchors agree)."""
        memo = self.statements

        def of(i: int) -> Statement:
            if i not in memo:
                memo[i] = statement(self.text(i))
            return memo[i]

        return np.array([anchors_agree(of(i), of(j)) for i, j in pairs.tolist()], dtype=bool)

    def lexical_ok(self, pairs: np.ndarray) -> np.ndarray:
        """Same family and anchors agree (the character-gram path of low-signal pairs)."""
        if not len(pairs):
            return np.zeros(0, dtype=bool)
        return (self.families[pairs[:, 0]] == self.families[pairs[:, 1]]) & self.anchors_ok(pairs)


def _stated_values(episodes: pd.DataFrame) -> np.ndarray:
    """Per episode, its task's stated values as canonical JSON, or None when it states none
    (an import, a task with no public parameters, a frame without the ``task_values`` column)."""
    raw = episodes["task_values"] if "task_values" in episodes else pd.Series([None] * len(episodes))
    memo: dict[str, str | None] = {}

    def canonical(text) -> str | None:
        if not isinstance(text, str):
            return None
        if text not in memo:
            value = json.loads(text) if text.strip() else None
            memo[text] = json.dumps(value, sort_keys=True) if value else None
        return memo[text]

    return np.array([canonical(t) for t in raw.tolist()], dtype=object)


def values_differ(values: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per pair: both tasks state their values and the values differ (a near miss, not a copy)."""
    if not len(pairs):
        return np.zeros(0, dtype=bool)
    a, b = values[pairs[:, 0]], values[pairs[:, 1]]
    return np.array([x is not None and y is not None and x != y for x, y in zip(a.tolist(), b.tolist(), strict=True)], dtype=bool)


def _low_signal_pairs(call_sig: np.ndarray, idx: np.ndarray, families: np.ndarray, text: Callable[[int], str],
                      max_group: int) -> np.ndarray:
    """All pairs among ``idx`` with identical calls and family (groups larger than ``max_group``
    are split further by the exact anchors of their ``text``)."""
    if len(idx) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    keys = pd.Series([families[i] + "\x00" + call_sig[i].tobytes().hex() for i in idx.tolist()])
    out = []
    for _, members in keys.groupby(keys).groups.items():
        members = idx[np.asarray(members)]
        if len(members) < 2:
            continue
        groups = [members]
        if len(members) > max_group:
            sub = pd.Series([" ".join(sorted(anchors(text(i)))) for i in members.tolist()])
            groups = [members[np.asarray(g)] for g in sub.groupby(sub).groups.values() if len(g) > 1]
        for g in groups:
            a, b = np.triu_indices(len(g), 1)
            out.append(np.stack([g[a], g[b]], axis=1))
    return np.concatenate(out).astype(np.int64) if out else np.zeros((0, 2), dtype=np.int64)


def near_duplicate_marks(
    episodes: pd.DataFrame,
    calls: CallSignatures,
    eligible: np.ndarray,
    task_success_rate: pd.Series,
    config: NearDupConfig = NearDupConfig(),
    anchors: np.ndarray | None = None,
    embed: Embed | None = None,
    executor: Executor | None = None,
) -> pd.DataFrame:
    """A ``near_duplicate`` mark per episode (``calls``: the signatures of its calls, :meth:`CallSignatures.of`).

    Only ``eligible`` episodes (sound, not exact duplicates) are compared; the others
    are marked ``not_compared``. ``anchors`` flags rows from earlier rounds: they take
    part in clusters and are kept before any other member (earlier rounds' decisions
    stand), but get no mark of their own. ``embed`` (unit vectors of texts) adds the
    semantic step; without it instructions compare by character grams only. ``executor`` (a
    Dask cluster's) searches the LSH bands of a large round on the cluster."""
    call_sig, has_calls, informative = calls.sig, calls.has_calls, calls.informative
    instr_sig = InstructionSignatures(episodes, MinHasher(config.num_perm), config.ngram)
    meaning = _Meaning(episodes, embed, config.semantic_threshold)
    bands, rows = config.bands()
    idx = np.flatnonzero(eligible & has_calls)
    keys = band_keys(call_sig, bands, rows, idx)
    pairs = idx[_candidate_pairs(keys, executor)] if len(idx) else np.zeros((0, 2), dtype=np.int64)
    if len(pairs):  # calls with little signal: the instruction decides (below)
        pairs = pairs[informative[pairs[:, 0]] | informative[pairs[:, 1]]]
    low = _low_signal_pairs(call_sig, np.flatnonzero(eligible & has_calls & ~informative), meaning.families,
                            meaning.text, config.max_group)
    task = episodes["task_id"].to_numpy()
    # success, failure and unknown (no reward) are three outcomes: only like pairs with like
    success = episodes["success"].astype("Float64").fillna(-1.0).to_numpy(dtype=float)

    def comparable(p: np.ndarray) -> np.ndarray:
        return p[(task[p[:, 0]] != task[p[:, 1]]) & (success[p[:, 0]] == success[p[:, 1]])] if len(p) else p

    pairs, low = comparable(pairs), comparable(low)
    w = config.action_weight
    calls_j = _similarity(call_sig, pairs)
    score = w * calls_j + (1 - w) * _similarity(instr_sig, pairs) if len(pairs) else np.zeros(0)
    undecided = (score < config.threshold) & (w * calls_j + (1 - w) >= config.threshold)
    if undecided.any():  # only one meaning can lift these over the threshold
        one = meaning(pairs[undecided])
        score[np.flatnonzero(undecided)[one]] = w * calls_j[undecided][one] + (1 - w)
    low_j = _similarity(instr_sig, low)
    lexical = np.flatnonzero(low_j >= config.threshold)  # few: anchors are checked on these only
    low_score = np.zeros(len(low))
    lexical = lexical[meaning.lexical_ok(low[lexical])]
    low_score[lexical] = low_j[lexical]
    low_score[meaning(low)] = 1.0
    pairs, score = np.concatenate([pairs, low]), np.concatenate([score, low_score])
    passing = np.flatnonzero(score >= config.threshold)  # few: stated values are compared on these only
    score[passing[values_differ(_stated_values(episodes), pairs[passing])]] = 0.0
    hits = pairs[score >= config.threshold]
    best_score = np.zeros(len(episodes))
    if len(hits):
        np.maximum.at(best_score, hits[:, 0], score[score >= config.threshold])
        np.maximum.at(best_score, hits[:, 1], score[score >= config.threshold])
    root = _components(len(episodes), hits)
    anchor = anchors if anchors is not None else np.zeros(len(episodes), dtype=bool)
    size = np.bincount(root, minlength=len(episodes))[root]
    member = np.flatnonzero(size > 1)  # a cluster's keeper is chosen among its members only
    hardness = pd.DataFrame({
        "root": root[member],
        "anchor": ~anchor[member],
        "difficulty": -episodes["difficulty"].fillna(1).to_numpy()[member],
        "rate": task_success_rate.reindex(episodes["task_id"].iloc[member]).fillna(0).to_numpy(),
        "steps": -episodes["n_steps"].fillna(0).to_numpy()[member],
        "eid": episodes["episode_id"].to_numpy()[member],
    })
    keeper = hardness.sort_values(["root", "anchor", "difficulty", "rate", "steps", "eid"]).groupby("root")["eid"].first()
    kept_id = np.full(len(episodes), None, dtype=object)
    kept_id[member] = keeper.reindex(root[member]).to_numpy()
    eids = episodes["episode_id"].to_numpy()
    mark, passed, reason, detail = [], [], [], []
    for i in range(len(episodes)):
        if not eligible[i]:
            mark.append("not_compared"), passed.append(True), reason.append("not eligible (broken or exact duplicate)")
            detail.append(None)
        elif not has_calls[i]:
            mark.append("unique"), passed.append(True), reason.append("no calls to compare"), detail.append(None)
        elif size[i] == 1:
            mark.append("unique"), passed.append(True), reason.append(""), detail.append(None)
        elif kept_id[i] == eids[i]:
            mark.append("kept"), passed.append(True)
            reason.append(f"hardest of a cluster of {size[i]}")
            detail.append({"cluster": eids[i], "size": int(size[i])})
        else:
            mark.append("near_duplicate"), passed.append(False)
            reason.append(f"near duplicate of {kept_id[i]} (score {best_score[i]:.2f})")
            detail.append({"cluster": kept_id[i], "duplicate_of": kept_id[i], "size": int(size[i]),
                           "score": round(float(best_score[i]), 3)})
    marks = marks_frame(episodes, CHECK, mark, passed, reason, detail)
    return marks[~anchor].reset_index(drop=True) if anchor.any() else marks


_PRIOR_COLUMNS = ["episode_id", "round_id", "task_id", "family", "instruction", "success", "difficulty", "n_steps",
                  "task_values"]


def near_duplicate_marks_with_history(
    episodes: pd.DataFrame,
    calls: CallSignatures,
    eligible: np.ndarray,
    task_success_rate: pd.Series,
    config: NearDupConfig,
    prior_episodes: pd.DataFrame,
    prior_calls: CallSignatures,
    embed: Embed | None = None,
    executor: Executor | None = None,
) -> pd.DataFrame:
    """Near-duplicate marks for ``episodes``, also against earlier rounds' representatives (``calls``,
    ``prior_calls``: the signatures of the calls of each).

    A member of a cluster that holds an earlier episode is a near duplicate of it.
    Marks come back in the order of ``episodes``."""
    prior_keep = ~prior_episodes["episode_id"].isin(episodes["episode_id"]).to_numpy()
    pe = prior_episodes.loc[prior_keep].reindex(columns=_PRIOR_COLUMNS)
    all_ep = pd.concat([episodes.reindex(columns=_PRIOR_COLUMNS).assign(_anchor=False, _eligible=eligible),
                        pe.assign(_anchor=True, _eligible=True)], ignore_index=True)
    order = np.argsort(all_ep["episode_id"].to_numpy(), kind="stable")
    all_ep = all_ep.iloc[order].reset_index(drop=True)
    all_calls = CallSignatures.concat([calls, prior_calls.take(np.flatnonzero(prior_keep))]).take(order)
    marks = near_duplicate_marks(
        all_ep, all_calls, all_ep["_eligible"].to_numpy(dtype=bool), task_success_rate, config,
        anchors=all_ep["_anchor"].to_numpy(dtype=bool), embed=embed, executor=executor,
    )
    return marks.set_index("episode_id").loc[episodes["episode_id"]].reset_index()[list(marks.columns)]
