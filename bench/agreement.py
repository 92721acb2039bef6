"""Agreement of the metric with people, on both development sets.

The sets are development aids that live outside the project (``../shared/data`` from the repo
root); they are never shipped or read at run time. Every command exits cleanly (status 0, with
a message) when the data is absent.

* HaluQuestQA (``--data ../shared/data/haluquestqa``, the default): experts marked irrelevant
  spans in a human and a GPT-4 answer to 698 questions; split by question
  (``bench/haluquestqa_split.json``: dev / heldout).
* MedQuAD/LiveQA (``--data ../shared/data/medquad_liveqa``): 565 answers to 86 consumer health
  questions graded 1-4; ``--subset all``. Its within-question grade 4 vs 3 pairs are the
  completeness test.

Commands::

    python -m bench.agreement split                    # (re)make bench/haluquestqa_split.json
    python -m bench.agreement baselines --subset heldout
    python -m bench.agreement run --mode focus --subset heldout
    python -m bench.agreement extract bench/results/agreement/haluquestqa_heldout_focus_s0.jsonl
    python -m bench.agreement report --subset heldout --paired FILE.txt OTHER.txt ...

``run`` writes ``<out>/<set>_<subset>_<mode>_s<seed>.jsonl`` (one result per row, without
embeddings) and one scores file per figure it carries: ``..._value.txt`` (the mode's score) and
``..._ragas.txt`` (the Ragas value from the same generations); ``<out>`` defaults to
``bench/results/agreement``. Scores files hold one float per line aligned with ``pairs.jsonl``
(``nan`` outside the subset or on failure), so ``python ../shared/tools/score_metric.py DATA
FILE`` reads them too. ``report`` prints each file's figures (:func:`evaluate`) with 95%
bootstrap intervals over questions, and paired differences on request.

The figures, from ``relevancy.analysis.agreement`` on the rows:

HaluQuestQA (rows have ``role`` and ``pair_id``)
    AUROC within each answer source (clean answers against answers with a marked span, so the
    human vs GPT-4 style difference does not count); Spearman against the graded label (1 -
    share of irrelevant sentences); pairwise accuracy over the questions whose two answers have
    different labels (ties one half), as the Ragas paper does.
MedQuAD/LiveQA (rows have ``qid``)
    AUROC of grade >= 3 against the rest over all answers (mostly topic match); Spearman with the
    grade; pairwise within a question, grade 4 against 3 (completeness) and 2 against 1.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import BENCH, RESULTS_DIR, SHARED_DATA

DEFAULT_DATA = SHARED_DATA / "haluquestqa"
MEDQUAD_DATA = SHARED_DATA / "medquad_liveqa"
SPLIT_FILE = BENCH / "haluquestqa_split.json"
SCORES_DIR = RESULTS_DIR / "agreement"
SPLIT_SEED = 20240601
ROLES = ("human_answer", "model_answer")
#: each set's figures, in report order, and their titles
FIGURES = {
    "haluquestqa": ("auroc_human_answer", "auroc_model_answer", "spearman", "pairwise"),
    "medquad": ("auroc", "spearman", "pairwise_4v3", "pairwise_2v1"),
}
TITLES = {
    "auroc_human_answer": "AUROC human answers",
    "auroc_model_answer": "AUROC GPT-4 answers",
    "spearman": "Spearman",
    "pairwise": "pairwise acc",
    "auroc": "AUROC grade ≥ 3",
    "pairwise_4v3": "pairwise 4 vs 3 (completeness)",
    "pairwise_2v1": "pairwise 2 vs 1",
}
#: within-question pairs: which two labels they compare (None: any two that differ)
PAIRS: dict[str, dict[str, tuple[float, float] | None]] = {
    "haluquestqa": {"pairwise": None},
    "medquad": {"pairwise_4v3": (4, 3), "pairwise_2v1": (2, 1)},
}


# ------------------------------------------------------------------------------------------
# the data
# ------------------------------------------------------------------------------------------


def load_rows(data: Path) -> list[dict[str, Any]]:
    with open(Path(data) / "pairs.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def dataset_kind(rows: Sequence[dict[str, Any]]) -> str:
    """``"haluquestqa"`` or ``"medquad"``, from the fields of the rows."""
    first = rows[0] if rows else {}
    if "role" in first and "pair_id" in first:
        return "haluquestqa"
    if "qid" in first:
        return "medquad"
    raise ValueError(f"unknown data set: rows have fields {sorted(first)}")


def question_of(row: dict[str, Any]) -> Any:
    return row["pair_id"] if "pair_id" in row else row["qid"]


def subset_mask(rows: list[dict[str, Any]], subset: str) -> list[bool]:
    if subset == "all":
        return [True] * len(rows)
    if dataset_kind(rows) != "haluquestqa":
        raise SystemExit(f"--subset {subset}: only HaluQuestQA has a split; use --subset all")
    ids = set(json.loads(SPLIT_FILE.read_text())["pair_ids"][subset])
    return [r["pair_id"] in ids for r in rows]


def subset_rows(data: Path, subset: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` rows of a subset, in file order (empty when the data is absent)."""
    if not (Path(data) / "pairs.jsonl").exists():
        return []
    rows = load_rows(data)
    return [r for r, m in zip(rows, subset_mask(rows, subset)) if m][:limit]


def make_split(rows: list[dict]) -> dict:
    """One third of the questions for development, two thirds held out; stratified, seeded."""
    by_pair: dict[int, dict[str, dict]] = collections.defaultdict(dict)
    for r in rows:
        by_pair[r["pair_id"]][r["role"]] = r
    strata: dict[tuple, list[int]] = collections.defaultdict(list)
    for pid, d in sorted(by_pair.items()):
        h, m = d["human_answer"], d["model_answer"]
        strata[(h["label_binary"], m["label_binary"], h["label"] != m["label"])].append(pid)
    rng = random.Random(SPLIT_SEED)
    dev: list[int] = []
    held: list[int] = []
    for key in sorted(strata):
        ids = strata[key][:]
        rng.shuffle(ids)
        n = round(len(ids) / 3)
        dev += ids[:n]
        held += ids[n:]
    return {
        "description": (
            "HaluQuestQA split by question (pair_id): one third development (used to choose "
            "settings), two thirds held out (reported). Stratified by (human label_binary, model "
            "label_binary, labels differ); random.Random(20240601) shuffle within each stratum; "
            "made by bench/agreement.py split."
        ),
        "seed": SPLIT_SEED,
        "pair_ids": {"dev": sorted(dev), "heldout": sorted(held)},
    }


def write_scores(path: Path, scores: Sequence[float]) -> None:
    path.write_text("".join(("nan" if math.isnan(s) else repr(float(s))) + "\n" for s in scores))


def read_scores(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()]


# ------------------------------------------------------------------------------------------
# the figures
# ------------------------------------------------------------------------------------------


class _Figures:
    """One set's rows (sorted by question, so that the bootstrap draws questions in the order
    the reports have always used), their labels and within-question pairs."""

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        self.kind = dataset_kind(rows)
        self.order = np.array(sorted(range(len(rows)), key=lambda i: question_of(rows[i])))
        rows = [rows[i] for i in self.order]
        self.groups = [question_of(r) for r in rows]
        self.label = np.array([r["label"] for r in rows], dtype=np.float64)
        self.good = np.array([r["label_binary"] for r in rows], dtype=np.float64)
        self.role = np.array([r.get("role", "") for r in rows])
        by_q: dict[Any, list[int]] = collections.defaultdict(list)
        for i, q in enumerate(self.groups):
            by_q[q].append(i)
        self.pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name, labels in PAIRS[self.kind].items():
            found = [
                (a, b)
                for idx in by_q.values()
                for a in idx
                for b in idx
                if (
                    self.label[a] > self.label[b]
                    if labels is None
                    else (self.label[a], self.label[b]) == labels
                )
            ]
            self.pairs[name] = (
                np.array([a for a, _ in found], dtype=np.int64),
                np.array([b for _, b in found], dtype=np.int64),
            )

    def __call__(self, score: np.ndarray, idx: np.ndarray) -> list[float]:
        """The figures of the rows at ``idx`` (a resample: rows repeat as often as drawn)."""
        from relevancy.analysis.agreement import auroc, pairwise_wins, spearman

        s, good = score[idx], self.good[idx]
        if self.kind == "haluquestqa":
            out = [auroc(s[self.role[idx] == r], good[self.role[idx] == r]) for r in ROLES]
        else:
            out = [auroc(s, good)]
        out.append(spearman(s, self.label[idx]))
        drawn = np.bincount(idx, minlength=score.size)  # a pair counts once per draw of it
        for better, worse in self.pairs.values():
            w = drawn[better]
            wins = pairwise_wins(score[better], score[worse])
            out.append(float(w @ wins / w.sum()) if w.sum() else math.nan)
        return out


def evaluate(
    rows: Sequence[dict[str, Any]],
    scores: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    minus: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Each figure of the set with a 95% bootstrap interval that resamples questions
    (``relevancy.core.stats.group_bootstrap``); rows with a NaN score are left out.

    With ``minus`` (another score of the same rows), the figures are the differences, both
    scored on the same resampled questions: a paired interval that excludes 0 means the two
    are clearly apart. Rows where either is NaN are left out of both.
    """
    from relevancy.core.stats import group_bootstrap

    score = np.asarray(scores, dtype=np.float64)
    keep = np.isfinite(score)
    other = None if minus is None else np.asarray(minus, dtype=np.float64)
    if other is not None:
        keep &= np.isfinite(other)
    f = _Figures([r for r, k in zip(rows, keep) if k])
    mine = score[keep][f.order]
    theirs = None if other is None else other[keep][f.order]

    def figures(idx: np.ndarray) -> list[float]:
        got = f(mine, idx)
        return got if theirs is None else [a - b for a, b in zip(got, f(theirs, idx))]

    point = figures(np.arange(mine.size))
    low, high = group_bootstrap(figures, f.groups, n_boot=n_boot, seed=seed)
    out: dict[str, Any] = {
        "kind": f.kind,
        "rows": int(keep.size),
        "scored": int(keep.sum()),
        "questions": len(set(f.groups)),
        "pairs": {name: int(p[0].size) for name, p in f.pairs.items()},
    }
    for k, name in enumerate(FIGURES[f.kind]):
        out[name] = {"value": point[k], "ci": [float(low[k]), float(high[k])]}
    return out


def format_ci(fig: dict[str, Any]) -> str:
    lo, hi = fig["ci"]
    return "–" if math.isnan(fig["value"]) else f"{fig['value']:.3f} ({lo:.3f} to {hi:.3f})"


# ------------------------------------------------------------------------------------------
# the commands
# ------------------------------------------------------------------------------------------


def _data_or_exit(data: Path) -> list[dict]:
    if not (data / "pairs.jsonl").exists():
        print(f"skipped: no data at {data} (pass --data DIR holding pairs.jsonl)")
        raise SystemExit(0)
    return load_rows(data)


def _stem(rows: list[dict], subset: str) -> str:
    return f"{dataset_kind(rows)}_{subset}"


def cmd_split(args: argparse.Namespace) -> None:
    split = make_split(_data_or_exit(args.data))
    if SPLIT_FILE.exists() and json.loads(SPLIT_FILE.read_text()) == split:
        print(f"{SPLIT_FILE.name} is up to date")
        return
    SPLIT_FILE.write_text(json.dumps(split) + "\n")
    print(f"wrote {SPLIT_FILE}")


def cmd_baselines(args: argparse.Namespace) -> None:
    """Answer length (both signs) and cosine(user_input, response) with the embedded embedder."""
    from relevancy import make_embedder

    rows = _data_or_exit(args.data)
    mask = subset_mask(rows, args.subset)
    stem = _stem(rows, args.subset)
    args.out.mkdir(parents=True, exist_ok=True)
    nan = float("nan")
    short = [-float(len(r["response"])) if m else nan for r, m in zip(rows, mask)]
    write_scores(args.out / f"{stem}_length_shorter.txt", short)
    write_scores(args.out / f"{stem}_length_longer.txt", [-s for s in short])
    chosen = [r for r, m in zip(rows, mask) if m]
    emb = make_embedder("local")
    started = time.perf_counter()
    q = emb.embed([r["user_input"] for r in chosen])
    a = emb.embed([r["response"] for r in chosen])
    seconds = time.perf_counter() - started
    cos = iter((q * a).sum(axis=1).tolist())
    write_scores(args.out / f"{stem}_cosine_qa.txt", [next(cos) if m else nan for m in mask])
    print(f"cosine baseline: {seconds / max(1, len(chosen)):.4f} s per row (embedding only)")


def cmd_run(args: argparse.Namespace) -> None:
    from relevancy import AnswerRelevancy
    from relevancy.backends import SmolLMGenerator

    rows = _data_or_exit(args.data)
    idx = [i for i, m in enumerate(subset_mask(rows, args.subset)) if m]
    if args.limit:
        idx = idx[: args.limit]
    earlier: dict[str, list[float]] = {}
    if args.resume_from:  # a cut run's scores files: score only the rows they lack, then merge
        for key in ("value", "ragas"):
            earlier[key] = read_scores(Path(f"{args.resume_from}_{key}.txt"))
        done = {i for i in idx if all(math.isfinite(v[i]) for v in earlier.values())}
        print(f"resuming: {len(done)} of {len(idx)} rows already scored in {args.resume_from}_*")
        idx = [i for i in idx if i not in done]
    metric = AnswerRelevancy(
        llm=SmolLMGenerator(seed=args.seed),
        mode=args.mode,
        cache=str(args.cache) if args.cache else False,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"{_stem(rows, args.subset)}_{args.mode}_s{args.seed}"
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            el = time.perf_counter() - started
            print(f"{done}/{total} rows, {el:.0f} s, {el / done:.2f} s/row", flush=True)

    with open(args.out / f"{stem}.jsonl", "w", encoding="utf-8") as fh:

        def keep(k: int, result: Any) -> None:  # written as rows finish: a cut run keeps them
            fh.write(json.dumps({"row": idx[k], **result.to_dict(embeddings=False)}) + "\n")
            fh.flush()

        results = metric.score_many(
            [(rows[i]["user_input"], rows[i]["response"]) for i in idx],
            concurrency=args.concurrency,
            progress=progress,
            on_result=keep,
        )
    value = earlier.get("value", [float("nan")] * len(rows))
    ragas = earlier.get("ragas", [float("nan")] * len(rows))
    for i, r in zip(idx, results):
        value[i], ragas[i] = r.value, r.ragas_value
    write_scores(args.out / f"{stem}_value.txt", value)
    if args.mode != "ragas":
        write_scores(args.out / f"{stem}_ragas.txt", ragas)
    fresh = [r.timings.get("total_s", 0.0) for r in results if not r.cached]
    if fresh:
        print(f"time per uncached row: {sum(fresh) / len(fresh):.2f} s ({len(fresh)} rows)")


def cmd_extract(args: argparse.Namespace) -> None:
    """Scores files from a run's jsonl (also a cut one): value, Ragas value, cos(question,
    answer) (``answer_similarity``: the cosine baseline on exactly the rows the run scored),
    and length both ways on the same rows."""
    rows = _data_or_exit(args.data)
    nan = float("nan")
    cols: dict[str, list[float]] = {k: [nan] * len(rows) for k in ("value", "ragas", "cosqa")}
    with open(args.jsonl, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            i = d["row"]
            if rows[i]["response"] != d["response"]:
                raise SystemExit(f"row {i} of {args.jsonl} does not match the data set")
            for key, field in (
                ("value", "value"),
                ("ragas", "ragas_value"),
                ("cosqa", "answer_similarity"),
            ):
                cols[key][i] = nan if d.get(field) is None else float(d[field])
    stem = args.jsonl.with_suffix("")
    for key, values in cols.items():
        write_scores(Path(f"{stem}_{key}.txt"), values)
    length = [
        -float(len(r["response"])) if math.isfinite(v) else nan for r, v in zip(rows, cols["value"])
    ]
    write_scores(Path(f"{stem}_length_shorter.txt"), length)
    write_scores(Path(f"{stem}_length_longer.txt"), [-x for x in length])
    print(f"wrote {stem}_{{value,ragas,cosqa,length_shorter,length_longer}}.txt")


def report_tables(
    rows: list[dict],
    mask: list[bool],
    files: list[Path],
    *,
    paired: bool = False,
    n_boot: int = 2000,
) -> str:
    """Markdown: one row of figures per scores file, then (``paired``) first file minus each.
    Only the rows every file scored count, and whole questions only (a cut run scores fewer)."""
    for path in files:
        mask = [m and math.isfinite(s) for m, s in zip(mask, read_scores(path))]
    if dataset_kind(rows) == "haluquestqa":  # both answers of a question in or out together
        done = collections.Counter(r["pair_id"] for r, m in zip(rows, mask) if m)
        mask = [m and done[r["pair_id"]] == 2 for r, m in zip(rows, mask)]
    chosen = [r for r, m in zip(rows, mask) if m]
    names = FIGURES[dataset_kind(rows)]
    scores = {p: [s for s, m in zip(read_scores(p), mask) if m] for p in files}
    head = "| score | " + " | ".join(TITLES[n] for n in names) + " |"
    lines = [head, "|" + " --- |" * (len(names) + 1)]
    for path in files:
        e = evaluate(chosen, scores[path], n_boot=n_boot)
        lines.append(f"| {path.stem} | " + " | ".join(format_ci(e[n]) for n in names) + " |")
    if paired and len(files) > 1:
        lines += ["", head.replace("| score |", f"| {files[0].stem} minus |"), lines[1]]
        for path in files[1:]:
            e = evaluate(chosen, scores[files[0]], n_boot=n_boot, minus=scores[path])
            lines.append(f"| {path.stem} | " + " | ".join(format_ci(e[n]) for n in names) + " |")
    e = evaluate(chosen, scores[files[0]], n_boot=1)
    counts = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in e["pairs"].items())
    lines.insert(0, f"{len(chosen)} answers to {e['questions']} questions ({counts}).\n")
    return "\n".join(lines)


def cmd_report(args: argparse.Namespace) -> None:
    rows = _data_or_exit(args.data)
    mask = subset_mask(rows, args.subset)
    print(report_tables(rows, mask, args.scores, paired=args.paired, n_boot=args.n_boot))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.agreement", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("split")
    subsets = ["dev", "heldout", "all"]
    b = sub.add_parser("baselines")
    b.add_argument("--subset", default="heldout", choices=subsets)
    b.add_argument("--out", type=Path, default=SCORES_DIR)
    r = sub.add_parser("run")
    r.add_argument("--mode", default="ragas")
    r.add_argument("--subset", default="heldout", choices=subsets)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--limit", type=int, default=0, help="only the first N rows of the subset")
    r.add_argument("--concurrency", type=int, default=2)
    r.add_argument("--cache", type=Path, default=None, help="cache folder (default: none)")
    r.add_argument("--out", type=Path, default=SCORES_DIR)
    r.add_argument(
        "--resume-from",
        default=None,
        metavar="STEM",
        help="STEM_value.txt and STEM_ragas.txt of a cut run: score only the rows "
        "they lack and write the merged figures (generations are per-row "
        "deterministic for a seed)",
    )
    x = sub.add_parser("extract")
    x.add_argument("jsonl", type=Path)
    p = sub.add_parser("report")
    p.add_argument("--subset", default="heldout", choices=subsets)
    p.add_argument("--n-boot", type=int, default=2000)
    p.add_argument("--paired", action="store_true", help="also: first file minus each other")
    p.add_argument("scores", type=Path, nargs="+")
    args = parser.parse_args(argv)
    commands = {
        "split": cmd_split,
        "baselines": cmd_baselines,
        "run": cmd_run,
        "extract": cmd_extract,
        "report": cmd_report,
    }
    commands[args.command](args)


if __name__ == "__main__":
    main()
