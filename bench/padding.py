"""The ``padded`` reason against the labels that say what padding is.

An answer is ``padded`` (``relevancy.core.triage.is_padded``) when, beside a sentence close to
the question, sentences the sentence table marks off topic or padding hold at least
``PAD_SHARE`` of its words; a "sentence" of fewer than ``FRAGMENT_WORDS`` words (a citation
marker "(ref 1)", a list number "2.") belongs to its neighbour and is never marked. Before
issue 36, any one marked sentence, fragments included, made an answer padded. This bench
compares the rules on:

* **HaluQuestQA** (development set 1, ``../shared/data/haluquestqa``): experts marked the
  irrelevant spans of 1,396 answers; ``label_binary`` 0 means the answer holds such a span.
  Precision, recall and F1 of ``padded`` against it, and how many answers are called padded;
* **MedQuAD/LiveQA** (development set 2): no padding labels; how many answers each rule calls
  padded, by the authors' grade (4: the best answers, where padding is least expected);
* the bundled **demo** (``answer_type`` padded, 6 of 48) and the **judge check set** (its 10
  padded answers against its 40 complete ones).

Only the embedding model runs (the sentence similarities need no generator): the embedded
MiniLM, as the dashboard's sentence table uses it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.harness import SHARED_DATA, main, table

#: the rules compared: name -> (fragments read with their neighbour, share of words needed)
RULES = {
    "before (any marked sentence)": (False, 0.0),
    "fragments joined, any share": (True, 0.0),
    "fragments joined, 10% of words": (True, 0.1),
    "fragments joined, 20% of words (shipped)": (True, 0.2),
    "fragments joined, 30% of words": (True, 0.3),
}


def _results(pairs: list[tuple[str, str]], embedder: Any) -> list[Any]:
    """Results holding only what ``is_padded`` reads: each sentence's similarity to the
    question (``parts``), as the metric records them."""
    from relevancy.core.formula import cosine_similarities
    from relevancy.core.result import RelevancyResult
    from relevancy.core.text import split_sentences

    texts: list[str] = []
    spans = []
    for question, answer in pairs:
        sentences = split_sentences(answer)
        spans.append((len(texts), len(sentences)))
        texts += [question, *sentences]
    vectors = embedder.embed(texts)
    out = []
    for (start, n), (question, answer) in zip(spans, pairs):
        sims = cosine_similarities(vectors[start + 1 : start + 1 + n], vectors[start])
        sentences = texts[start + 1 : start + 1 + n]
        result = RelevancyResult(user_input=question, response=answer, value=float("nan"))
        result.parts = [{"text": t, "similarity": float(s)} for t, s in zip(sentences, sims)]
        out.append(result)
    return out


def _flags(results: list[Any]) -> dict[str, list[bool]]:
    from relevancy.core import triage

    flags = {}
    kept = triage.FRAGMENT_WORDS
    try:
        for name, (fragments, share) in RULES.items():
            triage.FRAGMENT_WORDS = kept if fragments else 0
            flags[name] = [triage.is_padded(r, share) for r in results]
    finally:
        triage.FRAGMENT_WORDS = kept
    return flags


def _against(flags: list[bool], truth: list[bool]) -> dict[str, Any]:
    hits = sum(f and t for f, t in zip(flags, truth))
    called, real = sum(flags), sum(truth)
    precision = hits / called if called else float("nan")
    recall = hits / real if real else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    return {
        "called": called,
        "of": len(flags),
        "labelled": real,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def _read(name: str, limit: int | None) -> list[dict[str, Any]] | None:
    path = SHARED_DATA / name / "pairs.jsonl"
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return rows[:limit] if limit else rows


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from relevancy import make_embedder
    from relevancy.runs import demo_inputs
    from relevancy.scoring.judge import load_check_set

    embedder = make_embedder("local")
    figures: dict[str, Any] = {"rules": list(RULES)}
    halu = _read("haluquestqa", args.rows)
    if halu is not None:
        results = _results([(r["user_input"], r["response"]) for r in halu], embedder)
        truth = [r["label_binary"] == 0 for r in halu]
        figures["haluquestqa"] = {k: _against(v, truth) for k, v in _flags(results).items()}
    med = _read("medquad_liveqa", args.rows)
    if med is not None:
        results = _results([(r["user_input"], r["response"]) for r in med], embedder)
        grades = [int(r["label"]) for r in med]
        figures["medquad_liveqa"] = {
            name: {
                str(g): [sum(f for f, x in zip(v, grades) if x == g), grades.count(g)]
                for g in sorted(set(grades))
            }
            for name, v in _flags(results).items()
        }
    demo = demo_inputs()
    results = _results(list(zip(demo["user_input"], demo["response"])), embedder)
    truth = [t == "padded" for t in demo["answer_type"]]
    figures["demo"] = {k: _against(v, truth) for k, v in _flags(results).items()}
    pairs = [p for p in load_check_set() if p.kind == "padded"]
    check = [(p.user_input, p.better) for p in load_check_set()]
    check += [(p.user_input, p.worse) for p in pairs]
    truth = [False] * (len(check) - len(pairs)) + [True] * len(pairs)
    figures["check_set"] = {
        k: _against(v, truth) for k, v in _flags(_results(check, embedder)).items()
    }
    return figures


def _rows(fig: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            name,
            f"{v['called']} of {v['of']}",
            f"{v['labelled']}",
            v["precision"],
            v["recall"],
            v["f1"],
        ]
        for name, v in fig.items()
    ]


def tables(fig: dict[str, Any]) -> dict[str, str]:
    head = ["rule", "called padded", "labelled", "precision", "recall", "F1"]
    out = {}
    if "haluquestqa" in fig:
        out[""] = table(head, _rows(fig["haluquestqa"]))
    if "medquad_liveqa" in fig:
        grades = sorted(next(iter(fig["medquad_liveqa"].values())))
        rows = [
            [name, *(f"{v[g][0]} of {v[g][1]}" for g in grades)]
            for name, v in fig["medquad_liveqa"].items()
        ]
        out["medquad"] = table(["rule", *(f"grade {g}: called padded" for g in grades)], rows)
    out["demo"] = table(head, _rows(fig["demo"]))
    out["check_set"] = table(head, _rows(fig["check_set"]))
    return out


def arguments(p: argparse.ArgumentParser) -> None:
    del p  # --rows N (the harness's): the first N rows of each development set; 0: all


if __name__ == "__main__":
    raise SystemExit(main("padding", measure, arguments, rows=0, quick=["--rows", "100"]))
