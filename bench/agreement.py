"""Agreement of the metric with people on HaluQuestQA (experts marked irrelevant spans).

The data set is a development aid that lives outside the project (``../shared`` from the repo
root); it is never shipped or read at run time. Every command here exits cleanly (status 0,
with a message) when the data is absent.

Commands::

    python bench/agreement.py split                    # (re)make bench/haluquestqa_split.json
    python bench/agreement.py baselines --subset heldout --out bench/out
    python bench/agreement.py run --mode ragas --subset heldout --out bench/out [--seed 0]
    python bench/agreement.py extract bench/out/heldout_focus_s0.jsonl   # scores files
    python bench/agreement.py report --subset heldout --paired FILE.txt OTHER.txt ...

``run`` writes ``<out>/<subset>_<mode>_s<seed>.jsonl`` (one result per row, without embeddings)
and one scores file per figure it carries: ``..._value.txt`` (the mode's score) and
``..._ragas.txt`` (the Ragas-exact value from the same generations). Scores files hold one
float per line aligned with ``pairs.jsonl`` (``nan`` outside the subset or on failure), so
``python ../shared/tools/score_metric.py ../shared/data/haluquestqa FILE`` reads them too.
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

from _agreement_stats import ROLES, evaluate, format_ci, load_rows  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "haluquestqa"
SPLIT_FILE = Path(__file__).resolve().parent / "haluquestqa_split.json"
SPLIT_SEED = 20240601


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


def subset_mask(rows: list[dict], subset: str) -> list[bool]:
    if subset == "all":
        return [True] * len(rows)
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
    args.out.mkdir(parents=True, exist_ok=True)
    nan = float("nan")
    short = [-float(len(r["response"])) if m else nan for r, m in zip(rows, mask)]
    write_scores(args.out / f"{args.subset}_length_shorter.txt", short)
    write_scores(args.out / f"{args.subset}_length_longer.txt", [-s for s in short])
    chosen = [r for r, m in zip(rows, mask) if m]
    emb = make_embedder("local")
    started = time.perf_counter()
    q = emb.embed([r["user_input"] for r in chosen])
    a = emb.embed([r["response"] for r in chosen])
    seconds = time.perf_counter() - started
    cos = iter((q * a).sum(axis=1).tolist())
    write_scores(args.out / f"{args.subset}_cosine_qa.txt", [next(cos) if m else nan for m in mask])
    print(f"cosine baseline: {seconds / max(1, len(chosen)):.4f} s per row (embedding only)")


def cmd_run(args: argparse.Namespace) -> None:
    from relevancy import AnswerRelevancy
    from relevancy.backends._local_generator import SmolLMGenerator

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
    stem = f"{args.subset}_{args.mode}_s{args.seed}"
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


def cmd_report(args: argparse.Namespace) -> None:
    rows = _data_or_exit(args.data)
    mask = subset_mask(rows, args.subset)
    # the same rows for every metric: those that every file scored (a cut run scores fewer)
    for path in args.scores:
        mask = [m and math.isfinite(s) for m, s in zip(mask, read_scores(path))]
    # and whole questions only, so that both answers of a pair are in or out together
    pairs_done = collections.Counter(r["pair_id"] for r, m in zip(rows, mask) if m)
    mask = [m and pairs_done[r["pair_id"]] == 2 for r, m in zip(rows, mask)]
    chosen = [r for r, m in zip(rows, mask) if m]
    print(f"{len(chosen)} rows ({len(chosen) // 2} questions) scored by every file\n")
    header = "| scores | rows | " + " | ".join(
        [f"AUROC {r.split('_')[0]}" for r in ROLES] + ["Spearman", "pairwise acc"]
    )
    print(header + " |")
    print("|" + " --- |" * (header.count("|")))
    for path in args.scores:
        scores = [s for s, m in zip(read_scores(path), mask) if m]
        e = evaluate(chosen, scores, n_boot=args.n_boot)
        cells = [format_ci(e[f"auroc_{r}"]) for r in ROLES]
        cells += [format_ci(e["spearman"]), format_ci(e["pairwise"])]
        print(f"| {path.stem} | {e['scored']}/{e['rows']} | " + " | ".join(cells) + " |")
    if args.paired and len(args.scores) > 1:
        first = [s for s, m in zip(read_scores(args.scores[0]), mask) if m]
        print(f"\nPaired differences, {args.scores[0].stem} minus each (95% CI over questions):\n")
        print(header.replace("| scores |", "| minus |") + " |")
        print("|" + " --- |" * (header.count("|")))
        for path in args.scores[1:]:
            other = [s for s, m in zip(read_scores(path), mask) if m]
            e = evaluate(chosen, first, n_boot=args.n_boot, minus=other)
            cells = [format_ci(e[f"auroc_{r}"]) for r in ROLES]
            cells += [format_ci(e["spearman"]), format_ci(e["pairwise"])]
            print(f"| {path.stem} | {e['scored']}/{e['rows']} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("split")
    b = sub.add_parser("baselines")
    b.add_argument("--subset", default="heldout", choices=["dev", "heldout", "all"])
    b.add_argument("--out", type=Path, default=Path("bench/out"))
    r = sub.add_parser("run")
    r.add_argument("--mode", default="ragas")
    r.add_argument("--subset", default="heldout", choices=["dev", "heldout", "all"])
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--limit", type=int, default=0, help="only the first N rows of the subset")
    r.add_argument("--concurrency", type=int, default=2)
    r.add_argument("--cache", type=Path, default=None, help="cache folder (default: none)")
    r.add_argument("--out", type=Path, default=Path("bench/out"))
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
