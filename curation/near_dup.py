"""Cascade step 4b: near duplicates by MinHash + LSH, clusters, keep the hardest.

Each episode is two shingle sets: its near-call signatures (tool and normalised
arguments, as a *set*, so independent calls made in another order look the same) and
the character 5-grams of its normalised instruction. LSH over the call signatures
proposes candidates; a candidate pair is a near duplicate when

    action_weight * J(calls) + (1 - action_weight) * J(instruction) >= threshold,

both Jaccards estimated from the signatures. Calls carry most of the weight because a
paraphrase changes the wording and keeps the calls, while two distinct tasks of one
template share most of the wording and differ in an argument.

Rollouts of the same task are never paired here (choosing among them is the cost-aware
selection's job), nor a success with a failure (failures are evidence). Clusters are the
connected components of verified pairs; the hardest member (highest difficulty, then
lowest success rate of its task, then most steps, then smallest id) is kept and every
other member points to it by its stable episode id.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from curation.marking import marks_frame
from curation.minhash import MinHasher, band_keys, char_ngram_hashes, optimal_bands, shingle_hash
from curation.signatures import normalise_instruction

CHECK = "near_duplicate"


@dataclass(frozen=True)
class NearDupConfig:
    threshold: float = 0.8
    action_weight: float = 0.8
    num_perm: int = 128
    ngram: int = 5

    @property
    def lsh_threshold(self) -> float:
        """The call-Jaccard below which no pair can reach ``threshold``, less a margin."""
        floor = (self.threshold - (1.0 - self.action_weight)) / self.action_weight
        return max(0.3, floor - 0.1)

    def bands(self) -> tuple[int, int]:
        return optimal_bands(self.lsh_threshold, self.num_perm)


def _candidate_pairs(keys: np.ndarray) -> np.ndarray:
    """(i, j) pairs, i < j, that share a bucket in any band: neighbours in bucket order
    plus each member with its bucket's first (enough to connect every bucket)."""
    n, bands = keys.shape
    out = []
    pos = np.arange(n)
    for b in range(bands):
        order = np.argsort(keys[:, b], kind="stable")
        k = keys[order, b]
        same_as_prev = np.r_[False, k[1:] == k[:-1]]
        if not same_as_prev.any():
            continue
        group_start = np.maximum.accumulate(np.where(~same_as_prev, pos, 0))
        members = np.flatnonzero(same_as_prev)
        out.append(np.stack([order[members - 1], order[members]], axis=1))  # chain
        far = members[members - 1 != group_start[members]]
        out.append(np.stack([order[group_start[far]], order[far]], axis=1))  # star
    if not out:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(out)
    pairs = np.sort(pairs, axis=1)
    pairs = np.unique(pairs[:, 0].astype(np.int64) * n + pairs[:, 1])
    return np.stack([pairs // n, pairs % n], axis=1)


def _similarity(sig: np.ndarray, pairs: np.ndarray, chunk: int = 200_000) -> np.ndarray:
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


def signatures(
    episodes: pd.DataFrame, steps: pd.DataFrame, near_calls: pd.Series, hasher: MinHasher, ngram: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(call signatures, instruction signatures, has_calls) for ``episodes``.

    ``steps``/``near_calls`` must be ordered by episode id like ``episodes``."""
    pos = pd.Index(episodes["episode_id"]).get_indexer(steps["episode_id"])
    keep = (pos >= 0) & near_calls.notna().to_numpy()
    owner = pos[keep]
    call_sig = hasher.signatures(shingle_hash(near_calls.to_numpy()[keep].tolist()), owner, len(episodes))
    has_calls = np.zeros(len(episodes), dtype=bool)
    has_calls[owner] = True
    codes, distinct = pd.factorize(episodes["instruction"].fillna("").map(normalise_instruction))
    grams, gram_owner = char_ngram_hashes(list(distinct), ngram)
    instr_sig = hasher.signatures(grams, gram_owner, len(distinct))[codes]
    return call_sig, instr_sig, has_calls


def near_duplicate_marks(
    episodes: pd.DataFrame,
    steps: pd.DataFrame,
    near_calls: pd.Series,
    eligible: np.ndarray,
    task_success_rate: pd.Series,
    config: NearDupConfig = NearDupConfig(),
    anchors: np.ndarray | None = None,
) -> pd.DataFrame:
    """A ``near_duplicate`` mark per episode.

    Only ``eligible`` episodes (sound, not exact duplicates) are compared; the others
    are marked ``not_compared``. ``anchors`` flags rows from earlier rounds: they take
    part in clusters and are kept before any other member (earlier rounds' decisions
    stand), but get no mark of their own."""
    hasher = MinHasher(config.num_perm)
    call_sig, instr_sig, has_calls = signatures(episodes, steps, near_calls, hasher, config.ngram)
    bands, rows = config.bands()
    idx = np.flatnonzero(eligible & has_calls)
    keys = band_keys(call_sig[idx], bands, rows)
    pairs = idx[_candidate_pairs(keys)] if len(idx) else np.zeros((0, 2), dtype=np.int64)
    task = episodes["task_id"].to_numpy()
    # success, failure and unknown (no reward) are three outcomes: only like pairs with like
    success = episodes["success"].astype("Float64").fillna(-1.0).to_numpy(dtype=float)
    if len(pairs):
        pairs = pairs[(task[pairs[:, 0]] != task[pairs[:, 1]]) & (success[pairs[:, 0]] == success[pairs[:, 1]])]
    w = config.action_weight
    score = w * _similarity(call_sig, pairs) + (1 - w) * _similarity(instr_sig, pairs) if len(pairs) else np.zeros(0)
    hits = pairs[score >= config.threshold]
    best_score = np.zeros(len(episodes))
    if len(hits):
        np.maximum.at(best_score, hits[:, 0], score[score >= config.threshold])
        np.maximum.at(best_score, hits[:, 1], score[score >= config.threshold])
    root = _components(len(episodes), hits)
    anchor = anchors if anchors is not None else np.zeros(len(episodes), dtype=bool)
    hardness = pd.DataFrame({
        "root": root,
        "anchor": ~anchor,
        "difficulty": -episodes["difficulty"].fillna(1).to_numpy(),
        "rate": task_success_rate.reindex(episodes["task_id"]).fillna(0).to_numpy(),
        "steps": -episodes["n_steps"].fillna(0).to_numpy(),
        "eid": episodes["episode_id"].to_numpy(),
    })
    keeper = hardness.sort_values(["root", "anchor", "difficulty", "rate", "steps", "eid"]).groupby("root")["eid"].first()
    kept_id = keeper.reindex(root).to_numpy()
    size = pd.Series(root).map(pd.Series(root).value_counts()).to_numpy()
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


_PRIOR_COLUMNS = ["episode_id", "round_id", "task_id", "instruction", "success", "difficulty", "n_steps"]


def near_duplicate_marks_with_history(
    episodes: pd.DataFrame,
    steps: pd.DataFrame,
    near_calls: pd.Series,
    eligible: np.ndarray,
    task_success_rate: pd.Series,
    config: NearDupConfig,
    prior_episodes: pd.DataFrame,
    prior_steps: pd.DataFrame,
    prior_near_calls: pd.Series,
) -> pd.DataFrame:
    """Near-duplicate marks for ``episodes``, also against earlier rounds' representatives.

    A member of a cluster that holds an earlier episode is a near duplicate of it.
    Marks come back in the order of ``episodes``."""
    prior_keep = ~prior_episodes["episode_id"].isin(episodes["episode_id"]).to_numpy()
    pe = prior_episodes.loc[prior_keep, _PRIOR_COLUMNS]
    ps_mask = prior_steps["episode_id"].isin(pe["episode_id"]).to_numpy()
    all_ep = pd.concat([episodes[_PRIOR_COLUMNS].assign(_anchor=False, _eligible=eligible),
                        pe.assign(_anchor=True, _eligible=True)], ignore_index=True)
    all_ep = all_ep.sort_values("episode_id", kind="stable").reset_index(drop=True)
    all_steps = pd.concat([
        pd.DataFrame({"episode_id": steps["episode_id"].to_numpy(), "index": steps["index"].to_numpy(),
                      "near": near_calls.to_numpy()}),
        pd.DataFrame({"episode_id": prior_steps["episode_id"].to_numpy()[ps_mask],
                      "index": prior_steps["index"].to_numpy()[ps_mask], "near": prior_near_calls.to_numpy()[ps_mask]}),
    ], ignore_index=True).sort_values(["episode_id", "index"], kind="stable").reset_index(drop=True)
    marks = near_duplicate_marks(
        all_ep, all_steps, all_steps["near"], all_ep["_eligible"].to_numpy(dtype=bool), task_success_rate, config,
        anchors=all_ep["_anchor"].to_numpy(dtype=bool),
    )
    return marks.set_index("episode_id").loc[episodes["episode_id"]].reset_index()[list(marks.columns)]
