"""How well near-duplicate detection tells paraphrases from hard negatives, with and without the
semantic step. Prints recall (paraphrase pairs found) and false-positive rate (hard-negative pairs
merged) side by side.

    python bench/bench_semantic.py            # 150 tasks per family
    python bench/bench_semantic.py --quick    # a smoke run (tests run this)

Pairs, from generated tasks of every family:
- paraphrases, template writer: the same task (same public parameters) in another wording of its
  variant (``update_phone.direct`` vs ``update_phone.casual``);
- paraphrases, model writer: the instruction the project's test server writes for the task (its
  brain, called in-process exactly as the HTTP server calls it, with the writer's reject-and-retry
  loop). It only prefixes "Hey, " to the template wording: not a real paraphrase, so its recall is
  an easy case, shown for completeness;
- hard negatives: two tasks of one template (same wording) with different public parameters.

Three levels:
- instruction: "one meaning" (same family, embedding cosine >= threshold, anchors agree); cosine
  alone; character 5-gram Jaccard >= 0.8 with agreeing anchors (what the cascade uses without
  embeddings); plus a threshold sweep;
- episodes whose calls carry little signal (each pair answered by one ``finish`` with the same
  answer): the instruction decides; the near-duplicate step with and without embeddings;
- episodes with the reference solver's calls: calls decide most.
Both episode levels run with the tasks' stated values (generated tasks: a near miss never merges)
and without them (what an imported conversation gives the step).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from curation.minhash import MinHasher, char_ngram_hashes  # noqa: E402
from curation.near_dup import CallSignatures, NearDupConfig, near_duplicate_marks  # noqa: E402
from curation.semantic import anchors_agree, statement, wordllama_embed  # noqa: E402
from curation.signatures import near_call, normalise_instruction  # noqa: E402
from generators.phone.families import FAMILIES, get_family  # noqa: E402
from generators.writers.model_writer import check_instruction, writer_messages  # noqa: E402
from generators.writers.template import TemplateWriter  # noqa: E402
from tests.modelserver.brain import writer_reply  # noqa: E402


def test_server_wording(task) -> str:
    """What the model writer gets from the test server for ``task`` (reject-and-retry, 3 rounds)."""
    messages = writer_messages(task, task.instruction)
    for _ in range(3):
        reply = writer_reply(messages)
        text, why = check_instruction(reply, task, task.instruction)
        if text:
            return text
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": f"Rejected: {why}. Try again."}]
    return task.instruction


def pair_sets(per_family: int) -> dict[str, list[tuple]]:
    """name -> [(family, instruction a, instruction b, task a, task b)]."""
    writer = TemplateWriter()
    sets: dict[str, list[tuple]] = {"paraphrase (template writer)": [], "paraphrase (test-server writer)": [],
                                    "hard negative (same wording)": []}
    for fid in sorted(FAMILIES):
        fam = get_family(fid)
        by_template: dict[str, list] = {}
        for seed in range(per_family):
            task = fam.make_task(seed, 1 + seed % 3, writer)
            by_template.setdefault(task.template, []).append(task)
            variant = task.template.split(".")[0]
            other = [t for t in fam.templates if t.startswith(variant + ".") and t != task.template]
            if other:
                text = writer.word(fid, other[seed % len(other)], task.public_params)
                sets["paraphrase (template writer)"].append((fid, task.instruction, text, task, task))
            sets["paraphrase (test-server writer)"].append((fid, task.instruction, test_server_wording(task), task, task))
        for tasks in by_template.values():
            for a, b in zip(tasks, tasks[1:]):
                if a.public_params != b.public_params and a.instruction != b.instruction:
                    sets["hard negative (same wording)"].append((fid, a.instruction, b.instruction, a, b))
    return sets


def instruction_level(pairs: list[tuple], threshold: float) -> dict[str, np.ndarray]:
    a, b = [p[1] for p in pairs], [p[2] for p in pairs]
    va, vb = wordllama_embed(a), wordllama_embed(b)
    cos = np.einsum("ij,ij->i", va, vb)
    agree = np.array([anchors_agree(statement(x), statement(y)) for x, y in zip(a, b)])
    texts = [normalise_instruction(t) for t in a + b]
    h, o = char_ngram_hashes(texts, 5)
    sig = MinHasher(128).signatures(h, o, len(texts))
    jac = (sig[: len(a)] == sig[len(a):]).mean(axis=1)
    return {"cos": cos, "agree": agree, "jaccard": jac, "one meaning": (cos >= threshold) & agree,
            "cosine alone": cos >= threshold, "5-gram J>=0.8 + anchors": (jac >= 0.8) & agree}


def episode_level(pairs: list[tuple], low_signal: bool, embed, with_values: bool = True) -> float:
    """Share of pairs the near-duplicate step puts in one cluster (``with_values``: the tasks'
    stated values reach it, as in the cascade; without, as for an imported conversation)."""
    eps, steps = [], []
    for k, (fid, ia, ib, ta, tb) in enumerate(pairs):
        for side, instruction, task in (("a", ia, ta), ("b", ib, tb)):
            eid = f"p{k:05d}{side}"
            if low_signal:  # one finish, the same answer within the pair, another across pairs
                calls = [("finish", {"status": "completed", "answer": k})]
            else:
                calls = [(a.tool, a.arguments) for a in get_family(fid).reference_actions(task)]
                calls = [c for c in calls if c[0] != "finish"] + [("finish", {"status": "completed", "pair": k})]
            eps.append({"episode_id": eid, "round_id": "r", "task_id": f"t{eid}", "family": fid,
                        "instruction": instruction, "success": True, "difficulty": 1, "n_steps": len(calls),
                        "task_values": json.dumps(task.public_params) if with_values else None})
            for tool, args in calls:
                kind = tool if tool in ("finish", "ask_user") else "tool_call"
                steps.append({"episode_id": eid, "near": near_call(kind, tool, args)})
    episodes, steps = pd.DataFrame(eps), pd.DataFrame(steps)
    calls = CallSignatures.of(episodes, steps, steps["near"], NearDupConfig().num_perm)
    marks = near_duplicate_marks(episodes, calls, np.ones(len(episodes), dtype=bool),
                                 pd.Series(dtype=float), NearDupConfig(), embed=embed)
    cluster = {e: (json.loads(d)["cluster"] if m in ("kept", "near_duplicate") else e)
               for e, m, d in zip(marks["episode_id"], marks["mark"], marks["detail"])}
    return float(np.mean([cluster[f"p{k:05d}a"] == cluster[f"p{k:05d}b"] for k in range(len(pairs))]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-family", type=int, default=150, help="tasks generated per family")
    ap.add_argument("--quick", action="store_true", help="smoke mode: a few tasks per family")
    args = ap.parse_args(argv)
    per_family = 12 if args.quick else args.per_family
    threshold = NearDupConfig().semantic_threshold
    t0 = time.perf_counter()
    sets = pair_sets(per_family)
    names = list(sets)
    neg = names[-1]
    print("pairs: " + ", ".join(f"{n} {len(sets[n])}" for n in names) + f"  (semantic threshold {threshold})")
    levels = {n: instruction_level(sets[n], threshold) for n in names}
    print(f"\n{'instruction level':<28}" + "".join(f"{n:>34}" for n in names))
    for rule in ("one meaning", "cosine alone", "5-gram J>=0.8 + anchors"):
        print(f"{rule:<28}" + "".join(f"{levels[n][rule].mean():>34.3f}" for n in names))
    print(f"{'(rates: recall for paraphrases, false-positive rate for hard negatives)':<28}")
    print("\nthreshold sweep (one meaning): " + "  ".join(
        f"{t:.2f}: recall {((levels[names[0]]['cos'] >= t) & levels[names[0]]['agree']).mean():.3f} "
        f"fp {((levels[neg]['cos'] >= t) & levels[neg]['agree']).mean():.3f}" for t in (0.5, 0.6, 0.7, 0.8)))
    print("per family (template paraphrase recall / hard-negative fp): " + "  ".join(
        f"{f} {levels[names[0]]['one meaning'][[p[0] == f for p in sets[names[0]]]].mean():.2f}"
        f"/{levels[neg]['one meaning'][[p[0] == f for p in sets[neg]]].mean():.3f}" for f in sorted(FAMILIES)))
    print(f"\n{'near-duplicate step':<28}{'':>12}" + "".join(f"{n:>34}" for n in names))
    for values in (True, False):
        print("tasks' stated values " + ("known (generated tasks)" if values else "unknown (imported conversations)"))
        for low, label in ((True, "little signal (finish)"), (False, "reference calls")):
            for embed, how in ((None, "5-gram only"), (wordllama_embed, "+ semantic")):
                print(f"{label:<28}{how:>12}" + "".join(f"{episode_level(sets[n], low, embed, values):>34.3f}"
                                                         for n in names))
    print(f"\n{time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
