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

    python bench/agreement.py split                    # (re)make bench/haluquestqa_split.json
    python bench/agreement.py baselines --subset heldout --out bench/agreement_out
    python bench/agreement.py run --mode focus --subset heldout --out bench/agreement_out
    python bench/agreement.py extract bench/agreement_out/haluquestqa_heldout_focus_s0.jsonl
    python bench/agreement.py report --subset heldout --paired FILE.txt OTHER.txt ...

``run`` writes ``<out>/<set>_<subset>_<mode>_s<seed>.jsonl`` (one result per row, without
embeddings) and one scores file per figure it carries: ``..._value.txt`` (the mode's score) and
``..._ragas.txt`` (the Ragas value from the same generations). Scores files hold one float per
line aligned with ``pairs.jsonl`` (``nan`` outside the subset or on failure), so
``python ../shared/tools/score_metric.py DATA FILE`` reads them too. ``report`` prints the set's
figures (see ``_agreement_stats``) for each file, with paired differences on request.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_stats import dataset_kind, evaluate, figure_names, format_ci, load_rows  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
DEFAULT_DATA = SHARED_DATA / "haluquestqa"
MEDQUAD_DATA = SHARED_DATA / "medquad_liveqa"
SPLIT_FILE = Path(__file__).resolve().parent / "haluquestqa_split.json"
SPLIT_SEED = 20240601
#: short names of the sets, used in file names
SET_NAMES = {"haluquestqa": "haluquestqa", "medquad": "medquad"}
FIGURE_TITLES = {
    "auroc_human_answer": "AUROC human answers",
    "auroc_model_answer": "AUROC GPT-4 answers",
    "spearman": "Spearman",
    "pairwise": "pairwise acc",
    "auroc": "AUROC grade ≥ 3",
    "pairwise_4v3": "pairwise 4 vs 3 (completeness)",
    "pairwise_2v1": "pairwise 2 vs 1",
}


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


def set_name(rows: list[dict]) -> str:
    return SET_NAMES[dataset_kind(rows)]


def subset_mask(rows: list[dict], subset: str) -> list[bool]:
    if subset == "all":
        return [True] * len(rows)
    if dataset_kind(rows) != "haluquestqa":
        raise SystemExit(f"--subset {subset}: only HaluQuestQA has a split; use --subset all")
    ids = set(json.loads(SPLIT_FILE.read_text())["pair_ids"][subset])
    return [r["pair_id"] in ids for r in rows]


def write_scores(path: Path, scores: list[float]) -> None:
    path.write_text("".join(("nan" if math.isnan(s) else repr(float(s))) + "\n" for s in scores))


def read_scores(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()]


def _data_or_exit(data: Path) -> list[dict]:
    if not (data / "pairs.jsonl").exists():
        print(f"skipped: no data at {data} (pass --data DIR holding pairs.jsonl)")
        raise SystemExit(0)
    return load_rows(data)


def cmd_split(args: argparse.Namespace) -> None:
    rows = _data_or_exit(args.data)
    split = make_split(rows)
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
    stem = f"{set_name(rows)}_{args.subset}"
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
    mask = subset_mask(rows, args.subset)
    idx = [i for i, m in enumerate(mask) if m]
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
    stem = f"{set_name(rows)}_{args.subset}_{args.mode}_s{args.seed}"
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            el = time.perf_counter() - started
            print(f"{done}/{total} rows, {el:.0f} s, {el / done:.2f} s/row", flush=True)

    with open(args.out / f"{stem}.jsonl", "w", encoding="utf-8") as fh:

        def keep(k: int, result: object) -> None:  # written as rows finish: a cut run keeps them
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
        value[i] = r.value
        ragas[i] = r.ragas_value
    write_scores(args.out / f"{stem}_value.txt", value)
    if args.mode != "ragas":
        write_scores(args.out / f"{stem}_ragas.txt", ragas)
    fresh = [r.timings.get("total_s", 0.0) for r in results if not r.cached]
    if fresh:
        print(f"time per uncached row: {sum(fresh) / len(fresh):.2f} s ({len(fresh)} rows)")


def cmd_extract(args: argparse.Namespace) -> None:
    """Scores files from a run's jsonl (also a cut one): value, Ragas value, cos(question, answer).

    ``answer_similarity`` is cos(E(user_input), E(response)) from the same embedder, i.e. the
    cosine baseline on exactly the rows the run scored.
    """
    rows = _data_or_exit(args.data)
    nan = float("nan")
    cols: dict[str, list[float]] = {k: [nan] * len(rows) for k in ("value", "ragas", "cosqa")}
    with open(args.jsonl, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            i = d["row"]
            if rows[i]["response"] != d["response"]:
                raise SystemExit(f"row {i} of {args.jsonl} does not match the data set")
            for key, field in (("value", "value"), ("ragas", "ragas_value"),
                               ("cosqa", "answer_similarity")):  # fmt: skip
                cols[key][i] = nan if d.get(field) is None else float(d[field])
    stem = args.jsonl.with_suffix("")
    for key, values in cols.items():
        write_scores(Path(f"{stem}_{key}.txt"), values)
    length = [-float(len(r["response"])) if math.isfinite(v) else nan
              for r, v in zip(rows, cols["value"])]  # fmt: skip
    write_scores(Path(f"{stem}_length_shorter.txt"), length)
    write_scores(Path(f"{stem}_length_longer.txt"), [-x for x in length])
    print(f"wrote {stem}_{{value,ragas,cosqa,length_shorter,length_longer}}.txt")


def _common_mask(rows: list[dict], mask: list[bool], files: list[Path]) -> list[bool]:
    """The rows every file scored, and whole questions only (a cut run scores fewer)."""
    for path in files:
        mask = [m and math.isfinite(s) for m, s in zip(mask, read_scores(path))]
    if dataset_kind(rows) == "haluquestqa":  # both answers of a question in or out together
        done = collections.Counter(r["pair_id"] for r, m in zip(rows, mask) if m)
        mask = [m and done[r["pair_id"]] == 2 for r, m in zip(rows, mask)]
    return mask


def report_tables(
    rows: list[dict],
    mask: list[bool],
    files: list[Path],
    *,
    labels: list[str] | None = None,
    paired: bool = False,
    n_boot: int = 2000,
) -> str:
    """Markdown: one row of figures per scores file, then (``paired``) first file minus each."""
    mask = _common_mask(rows, mask, files)
    chosen = [r for r, m in zip(rows, mask) if m]
    kind = dataset_kind(rows)
    names = figure_names(kind)
    labels = labels or [p.stem for p in files]
    scores = {p: [s for s, m in zip(read_scores(p), mask) if m] for p in files}
    head = "| score | " + " | ".join(FIGURE_TITLES[n] for n in names) + " |"
    lines = [head, "|" + " --- |" * (len(names) + 1)]
    for label, path in zip(labels, files):
        e = evaluate(chosen, scores[path], n_boot=n_boot)
        lines.append(f"| {label} | " + " | ".join(format_ci(e[n]) for n in names) + " |")
    if paired and len(files) > 1:
        lines += ["", head.replace("| score |", f"| {labels[0]} minus |"), lines[1]]
        for label, path in zip(labels[1:], files[1:]):
            e = evaluate(chosen, scores[files[0]], n_boot=n_boot, minus=scores[path])
            lines.append(f"| {label} | " + " | ".join(format_ci(e[n]) for n in names) + " |")
    e = evaluate(chosen, scores[files[0]], n_boot=1)
    counts = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in e["pairs"].items())
    lines.insert(0, f"{len(chosen)} answers to {e['questions']} questions ({counts}).\n")
    return "\n".join(lines)


def cmd_report(args: argparse.Namespace) -> None:
    rows = _data_or_exit(args.data)
    mask = subset_mask(rows, args.subset)
    print(report_tables(rows, mask, args.scores, paired=args.paired, n_boot=args.n_boot))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("split")
    b = sub.add_parser("baselines")
    b.add_argument("--subset", default="heldout", choices=["dev", "heldout", "all"])
    b.add_argument("--out", type=Path, default=Path("bench/agreement_out"))
    r = sub.add_parser("run")
    r.add_argument("--mode", default="ragas")
    r.add_argument("--subset", default="heldout", choices=["dev", "heldout", "all"])
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--limit", type=int, default=0, help="only the first N rows of the subset")
    r.add_argument("--concurrency", type=int, default=2)
    r.add_argument("--cache", type=Path, default=None, help="cache folder (default: none)")
    r.add_argument("--out", type=Path, default=Path("bench/agreement_out"))
    r.add_argument(
        "--resume-from",
        default=None,
        metavar="STEM",
        help="STEM_value.txt and STEM_ragas.txt of a cut run: score only the rows they lack "
        "and write the merged figures (generations are per-row deterministic for a seed)",
    )
    x = sub.add_parser("extract")
    x.add_argument("jsonl", type=Path)
    p = sub.add_parser("report")
    p.add_argument("--subset", default="heldout", choices=["dev", "heldout", "all"])
    p.add_argument("--n-boot", type=int, default=2000)
    p.add_argument("--paired", action="store_true", help="also: first file minus each other")
    p.add_argument("scores", type=Path, nargs="+")
    args = parser.parse_args(argv)
    {
        "split": cmd_split,
        "baselines": cmd_baselines,
        "run": cmd_run,
        "extract": cmd_extract,
        "report": cmd_report,
    }[args.command](args)


if __name__ == "__main__":
    main()
