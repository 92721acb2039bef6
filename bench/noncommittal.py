"""How well each noncommittal detector agrees with a labelled set, and what language the API
prompt's questions come back in.

The set, ``bench/noncommittal_set.jsonl``, was written for this bench (89 question/response
pairs, 45 noncommittal): plain evasions, evasions that repeat the question's words (the hard
case for an embedding), refusals, direct answers, hedged answers that still answer, "it depends"
followed by an answer, and longer answers with one unsure sentence. It is split by id: even ids
are the development half (used to choose the exemplar threshold), odd ids are held out.

Detectors:

``exemplars``
    The embedded default: the response's MiniLM similarity to ``EVASIVE_EXEMPLARS`` at or above
    a threshold, decided by the library's own ``exemplar_verdict`` (the response alone, as
    before, and also without the question's words, as shipped). Swept on the development half,
    reported on the held-out half.
``llm``
    SmolLM2-135M's own flag, as an OpenAI-compatible server running it would return it: the API
    prompt (``relevancy.core.prompt.chat_messages``) with the JSON schema as grammar, run in-process
    by llama-cpp-python, ``--strictness`` samples at temperature 0.7; noncommittal when every
    sample is flagged (Ragas' rule), and also "any sample flagged" for reference.

The same generations also say how often the API prompt makes the small model write a question in
French for an English response (the prompt's last few-shot example used to be French). Each
prompt variant in ``--prompts`` runs on the same items with the same seeds, so the figures are
side by side.

    python bench/noncommittal.py --json bench/results/noncommittal.json

:func:`render` writes the "Noncommittal detection" section of ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEMO_CSV, emit, fmt, log, r, table  # noqa: E402

from relevancy.backends import make_embedder  # noqa: E402
from relevancy.core.formula import cosine_similarities
from relevancy.core.noncommittal import (
    DEFAULT_EXEMPLAR_THRESHOLD,
    EVASIVE_EXEMPLARS,
    exemplar_verdict,
    without_question_words,
)

SET_PATH = Path(__file__).resolve().parent / "noncommittal_set.jsonl"
THRESHOLDS = [round(x, 2) for x in np.arange(0.20, 0.81, 0.05)]
# Words that mark a French question (the set's responses are all English).
_FRENCH = re.compile(
    r"\b(quel|quelle|quels|quelles|combien|pourquoi|comment|est-ce|qu'est|le|la|les|des|du|"
    r"une|est|sont|il|elle)\b|[éèêàçù]",
    re.IGNORECASE,
)


def load_set(path: Path = SET_PATH) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def confusion(truth: list[int], said: list[bool]) -> dict[str, float]:
    t = np.asarray(truth, dtype=bool)
    s = np.asarray(said, dtype=bool)
    tp, fp = int((t & s).sum()), int((~t & s).sum())
    fn, tn = int((t & ~s).sum()), int((~t & ~s).sum())
    return {
        "n": len(t),
        "accuracy": r((tp + tn) / len(t)),
        "precision": r(tp / (tp + fp)) if tp + fp else float("nan"),
        "recall": r(tp / (tp + fn)) if tp + fn else float("nan"),
        "false_zeroes": fp,
        "missed": fn,
        "balanced_accuracy": r(0.5 * (tp / max(tp + fn, 1) + tn / max(tn + fp, 1))),
    }


def accuracy_ci(truth: list[int], said: list[bool], n_boot: int = 2000) -> list[float]:
    hits = (np.asarray(truth, dtype=bool) == np.asarray(said, dtype=bool)).astype(float)
    rng = np.random.default_rng(0)
    boots = hits[rng.integers(0, len(hits), size=(n_boot, len(hits)))].mean(axis=1)
    return [r(x) for x in np.quantile(boots, [0.025, 0.975])]


def by_kind(items: list[dict[str, Any]], said: list[bool]) -> dict[str, str]:
    out: dict[str, list[int]] = {}
    for it, s in zip(items, said):
        out.setdefault(it["kind"], []).append(int(bool(s) == bool(it["noncommittal"])))
    return {k: f"{sum(v)}/{len(v)}" for k, v in out.items()}


class ExemplarInputs:
    """What the shipped exemplar detector looks at, for each (question, response) pair: the
    response's embedding and that of the response without the question's words.

    Every verdict comes from the library's own :func:`exemplar_verdict`; the closest
    similarity is kept for reading (``similarity_by_item``).
    """

    def __init__(self, embedder: Any, exemplars: np.ndarray, pairs: list[tuple[str, str]]):
        self.exemplars = exemplars
        self.plain = embedder.embed([resp for _, resp in pairs])
        # a response with none of the question's words left out is embedded again as it is
        self.stripped = embedder.embed(
            [without_question_words(q, resp) or resp for q, resp in pairs]
        )

    def verdicts(self, threshold: float, *, words_out: bool) -> list[bool]:
        """The detector's verdict on every pair; ``words_out`` False: the response alone."""
        return [
            exemplar_verdict(
                plain, self.exemplars, threshold, stripped_vector=stripped if words_out else None
            )[0]
            for plain, stripped in zip(self.plain, self.stripped)
        ]

    def closest(self, *, words_out: bool) -> list[float]:
        """Each pair's similarity to its closest exemplar, as the verdict compares it."""
        best = [cosine_similarities(self.exemplars, v).max() for v in self.plain]
        if words_out:
            stripped = [cosine_similarities(self.exemplars, v).max() for v in self.stripped]
            best = [max(a, b) for a, b in zip(best, stripped)]
        return [float(x) for x in best]


def exemplar_section(items: list[dict[str, Any]]) -> dict[str, Any]:
    embedder = make_embedder("local")
    exemplars = embedder.embed(list(EVASIVE_EXEMPLARS))
    inputs = ExemplarInputs(embedder, exemplars, [(it["question"], it["response"]) for it in items])
    variants = {
        # before: the response alone, threshold 0.6
        "response_only": False,
        # shipped: the response or the response without the question's words, whichever is closer
        "with_question_words_out": True,
    }
    dev = [i for i, it in enumerate(items) if it["id"] % 2 == 0]
    held = [i for i, it in enumerate(items) if it["id"] % 2 == 1]
    truth = [int(it["noncommittal"]) for it in items]
    out: dict[str, Any] = {"shipped_threshold": DEFAULT_EXEMPLAR_THRESHOLD}
    for name, words_out in variants.items():
        said_at = {t: inputs.verdicts(t, words_out=words_out) for t in THRESHOLDS}
        sweep = []
        for t in THRESHOLDS:
            said = [said_at[t][i] for i in dev]
            sweep.append({"threshold": t, **confusion([truth[i] for i in dev], said)})
        # the best balanced accuracy among thresholds that zero no real answer on dev
        safe = [x for x in sweep if x["false_zeroes"] == 0] or sweep
        chosen = max(safe, key=lambda x: (x["balanced_accuracy"], x["threshold"]))
        entry: dict[str, Any] = {"dev_sweep": sweep, "chosen_on_dev": chosen["threshold"]}
        for label, t in (("at_0.6", 0.6), ("at_chosen", chosen["threshold"])):
            said = [said_at[t][i] for i in held]
            truth_h = [truth[i] for i in held]
            entry[f"heldout_{label}"] = {
                "threshold": t,
                **confusion(truth_h, said),
                "accuracy_ci": accuracy_ci(truth_h, said),
                "by_kind": by_kind([items[i] for i in held], said),
            }
        entry["similarity_by_item"] = [r(x) for x in inputs.closest(words_out=words_out)]
        out[name] = entry
    out["demo"] = demo_section(embedder, exemplars)
    return out


def demo_section(embedder: Any, exemplars: np.ndarray) -> dict[str, Any]:
    """The shipped demo rows, hand-labelled ``answer_type``: ``evasive`` against the rest.

    Not used to choose anything: a second, independent check of both detectors.
    """
    with DEMO_CSV.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    inputs = ExemplarInputs(embedder, exemplars, [(x["user_input"], x["response"]) for x in rows])
    truth = [int(x["answer_type"] == "evasive") for x in rows]
    before = inputs.verdicts(0.6, words_out=False)
    after = inputs.verdicts(DEFAULT_EXEMPLAR_THRESHOLD, words_out=True)
    return {
        "rows": len(rows),
        "evasive": sum(truth),
        "response_only_at_0.6": confusion(truth, before),
        "shipped": confusion(truth, after),
    }


def french(question: str) -> bool:
    return bool(_FRENCH.search(question))


def llm_section(items: list[dict[str, Any]], strictness: int, prompts: list[str]) -> dict[str, Any]:
    from llama_cpp import Llama, LlamaGrammar

    from relevancy.backends import smollm_model_path
    from relevancy.core.prompt import EXAMPLES, chat_messages, output_schema, parse_output

    english = tuple(e for e in EXAMPLES if not french(e.output.question))
    in_french = tuple(e for e in EXAMPLES if french(e.output.question))
    variants = {
        # the order before this bench: the French example right before the response
        "french_last": english + in_french,
        "french_first": in_french + english,
        "no_french": english,
    }
    unknown = [p for p in prompts if p not in variants]
    if unknown:
        raise SystemExit(f"unknown prompt variant(s) {unknown}; known: {', '.join(variants)}")
    llm = Llama(str(smollm_model_path()), n_ctx=2048, n_threads=2, verbose=False)
    grammar = LlamaGrammar.from_json_schema(json.dumps(output_schema()["schema"]), verbose=False)
    truth = [int(it["noncommittal"]) for it in items]
    out: dict[str, Any] = {"strictness": strictness, "temperature": 0.7}
    for name in prompts:
        started = time.perf_counter()
        flags: list[list[bool | None]] = []
        questions: list[list[str]] = []
        for k, it in enumerate(items):
            row_flags: list[bool | None] = []
            row_q: list[str] = []
            messages = chat_messages(it["response"], examples=variants[name])
            for i in range(strictness):
                text = llm.create_chat_completion(
                    messages, temperature=0.7, seed=i, max_tokens=80, grammar=grammar
                )["choices"][0]["message"]["content"]
                try:
                    parsed = parse_output(text)
                    row_flags.append(bool(parsed.noncommittal))
                    row_q.append(parsed.question)
                except ValueError:
                    row_flags.append(None)
            flags.append(row_flags)
            questions.append(row_q)
            if (k + 1) % 20 == 0:
                log(f"{name}: {k + 1}/{len(items)} items")
        known = [[f for f in fl if f is not None] for fl in flags]
        all_flagged = [bool(k) and all(k) for k in known]
        any_flagged = [any(k) for k in known]
        sample_flags = [(f, t) for k, t in zip(known, truth) for f in k]
        all_q = [q for qs in questions for q in qs]
        out[name] = {
            "shipped": variants[name] == EXAMPLES,
            "all_flagged": {
                **confusion(truth, all_flagged),
                "accuracy_ci": accuracy_ci(truth, all_flagged),
                "by_kind": by_kind(items, all_flagged),
            },
            "any_flagged": confusion(truth, any_flagged),
            "per_sample_accuracy": r(np.mean([f == bool(t) for f, t in sample_flags])),
            "unparsed_samples": sum(len(f) - len(k) for f, k in zip(flags, known)),
            "questions": len(all_q),
            "french_questions": sum(french(q) for q in all_q),
            "french_examples": [q for q in all_q if french(q)][:5],
            "seconds": r(time.perf_counter() - started, 1),
        }
        log(f"{name}: done in {out[name]['seconds']} s")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    p.add_argument("--strictness", type=int, default=3)
    p.add_argument(
        "--prompts", default="french_last,french_first,no_french", help="API prompt variants to run"
    )
    p.add_argument("--skip-llm", action="store_true", help="only the exemplar detector")
    return p


def measure(args: Any) -> dict[str, Any]:
    """The exemplar detector on the set and the demo, then (unless skipped) the LLM's flag."""
    items = load_set()
    data: dict[str, Any] = {
        "items": len(items),
        "noncommittal": sum(it["noncommittal"] for it in items),
        "dev_items": sum(1 for it in items if it["id"] % 2 == 0),
        "heldout_items": sum(1 for it in items if it["id"] % 2 == 1),
    }
    data["exemplars"] = exemplar_section(items)
    if not args.skip_llm:
        data["llm"] = llm_section(items, args.strictness, args.prompts.split(","))
    return data


def main() -> int:
    args = build_parser().parse_args()
    emit(measure(args), args.json)
    return 0


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Noncommittal detection" section of RESULTS.md."""
    ex = fig["exemplars"]
    before, after = ex["response_only"]["heldout_at_0.6"], ex["with_question_words_out"]
    shipped = after["heldout_at_chosen"]
    kinds = list(shipped["by_kind"])

    def ci(x: dict[str, Any]) -> str:
        lo, hi = x["accuracy_ci"]
        return f"{fmt(x['accuracy'])} ({fmt(lo)}-{fmt(hi)})"

    rows = [
        [
            "exemplars, the response only, threshold 0.6 (before)",
            ci(before),
            fmt(before["recall"]),
            before["false_zeroes"],
            *[before["by_kind"][k] for k in kinds],
        ],
        [
            "exemplars, the response only, threshold "
            f"{ex['response_only']['chosen_on_dev']} (chosen on dev)",
            ci(ex["response_only"]["heldout_at_chosen"]),
            fmt(ex["response_only"]["heldout_at_chosen"]["recall"]),
            ex["response_only"]["heldout_at_chosen"]["false_zeroes"],
            *[ex["response_only"]["heldout_at_chosen"]["by_kind"][k] for k in kinds],
        ],
        [
            f"**exemplars, also without the question's words, threshold {after['chosen_on_dev']}"
            " (shipped)**",
            ci(shipped),
            fmt(shipped["recall"]),
            shipped["false_zeroes"],
            *[shipped["by_kind"][k] for k in kinds],
        ],
    ]
    out = (
        f"A labelled set written for this bench (`bench/noncommittal_set.jsonl`, {fig['items']} "
        f"answers, {fig['noncommittal']} noncommittal), split by id: {fig['dev_items']} to choose "
        f"the threshold (the best balanced accuracy that zeroes no real answer), "
        f"{fig['heldout_items']} held out. Held-out figures, accuracy with a 95% bootstrap CI; "
        "per kind, items judged right:\n\n"
        + table(["detector", "accuracy", "recall", "real answers zeroed", *kinds], rows)
    )
    demo = ex.get("demo")
    if demo:
        b, a = demo["response_only_at_0.6"], demo["shipped"]
        out += (
            f"\n\nThe shipped demo ({demo['rows']} rows, {demo['evasive']} hand-labelled "
            "evasive; not used to choose anything): evasive answers caught "
            f"{demo['evasive'] - b['missed']}/{demo['evasive']} before, "
            f"{demo['evasive'] - a['missed']}/{demo['evasive']} now; real answers zeroed "
            f"{b['false_zeroes']} before, {a['false_zeroes']} now."
        )
    llm = fig.get("llm")
    if llm:
        names = [k for k, v in llm.items() if isinstance(v, dict)]
        out += (
            "\n\nSmolLM2-135M's own flag through the API prompt (what an OpenAI-compatible "
            f"server running it returns; JSON-schema grammar, {llm['strictness']} samples at "
            f"temperature {llm['temperature']}), on all {fig['items']} items, for each order of "
            "the prompt's few-shot examples:\n\n"
            + table(
                [
                    "few-shot examples",
                    "accuracy, all samples flagged (Ragas' rule)",
                    "accuracy, any sample flagged",
                    "per sample",
                    "French questions for English answers",
                ],
                [
                    [
                        f"**{n} (shipped)**" if llm[n]["shipped"] else n,
                        ci(llm[n]["all_flagged"]),
                        fmt(llm[n]["any_flagged"]["accuracy"]),
                        fmt(llm[n]["per_sample_accuracy"]),
                        f"{llm[n]['french_questions']}/{llm[n]['questions']}",
                    ]
                    for n in names
                ],
            )
            + "\n\nThe small model's flag is at chance whatever the order, which is why the "
            "embedded default uses the exemplar detector. The order matters for the language: "
            "with the French example right before the response, the model wrote French "
            "questions for English answers."
        )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
