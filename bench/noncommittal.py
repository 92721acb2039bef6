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
    a threshold. Swept on the development half, reported on the held-out half.
``llm``
    SmolLM2-135M's own flag, as an OpenAI-compatible server running it would return it: the API
    prompt (``relevancy._prompt.chat_messages``) with the JSON schema as grammar, run in-process
    by llama-cpp-python, ``--strictness`` samples at temperature 0.7; noncommittal when every
    sample is flagged (Ragas' rule), and also "any sample flagged" for reference.

The same generations also say how often the API prompt makes the small model write a question in
French for an English response (the prompt's last few-shot example used to be French). Each
prompt variant in ``--prompts`` runs on the same items with the same seeds, so the figures are
side by side.

    python bench/noncommittal.py --json bench/results/noncommittal.json
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import emit, log, r  # noqa: E402

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


def exemplar_similarities(
    embedder: Any, exemplars: np.ndarray, pairs: list[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Each response's best similarity to the exemplars: as written, and without the question's
    words (the two inputs of the shipped detector)."""
    from relevancy._formula import cosine_similarities
    from relevancy._noncommittal import without_question_words

    plain = embedder.embed([resp for _, resp in pairs])
    stripped = embedder.embed([without_question_words(q, resp) or resp for q, resp in pairs])
    best = [
        np.array([float(cosine_similarities(exemplars, v).max()) for v in m])
        for m in (plain, stripped)
    ]
    return best[0], best[1]


def exemplar_section(items: list[dict[str, Any]]) -> dict[str, Any]:
    from relevancy._noncommittal import (
        DEFAULT_EXEMPLAR_THRESHOLD,
        EVASIVE_EXEMPLARS,
    )
    from relevancy.backends import make_embedder

    embedder = make_embedder("local")
    exemplars = embedder.embed(list(EVASIVE_EXEMPLARS))
    sim_plain, sim_stripped = exemplar_similarities(
        embedder, exemplars, [(it["question"], it["response"]) for it in items]
    )
    variants = {
        # before: the response alone, threshold 0.6
        "response_only": sim_plain,
        # shipped: the response or the response without the question's words, whichever is closer
        "with_question_words_out": np.maximum(sim_plain, sim_stripped),
    }
    dev = [i for i, it in enumerate(items) if it["id"] % 2 == 0]
    held = [i for i, it in enumerate(items) if it["id"] % 2 == 1]
    truth = [int(it["noncommittal"]) for it in items]
    out: dict[str, Any] = {"shipped_threshold": DEFAULT_EXEMPLAR_THRESHOLD}
    for name, best in variants.items():
        sweep = []
        for t in THRESHOLDS:
            said = [bool(best[i] >= t) for i in dev]
            sweep.append({"threshold": t, **confusion([truth[i] for i in dev], said)})
        # the best balanced accuracy among thresholds that zero no real answer on dev
        safe = [x for x in sweep if x["false_zeroes"] == 0] or sweep
        chosen = max(safe, key=lambda x: (x["balanced_accuracy"], x["threshold"]))
        entry: dict[str, Any] = {"dev_sweep": sweep, "chosen_on_dev": chosen["threshold"]}
        for label, t in (("at_0.6", 0.6), ("at_chosen", chosen["threshold"])):
            said = [bool(best[i] >= t) for i in held]
            truth_h = [truth[i] for i in held]
            entry[f"heldout_{label}"] = {
                "threshold": t,
                **confusion(truth_h, said),
                "accuracy_ci": accuracy_ci(truth_h, said),
                "by_kind": by_kind([items[i] for i in held], said),
            }
        entry["similarity_by_item"] = [r(x) for x in best]
        out[name] = entry
    out["demo"] = demo_section(embedder, exemplars)
    return out


def demo_section(embedder: Any, exemplars: np.ndarray) -> dict[str, Any]:
    """The shipped demo rows, hand-labelled ``answer_type``: ``evasive`` against the rest.

    Not used to choose anything: a second, independent check of both detectors.
    """
    import csv

    from relevancy._noncommittal import DEFAULT_EXEMPLAR_THRESHOLD

    path = Path(__file__).resolve().parents[1] / "relevancy" / "data" / "demo.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    sim_plain, sim_stripped = exemplar_similarities(
        embedder, exemplars, [(x["user_input"], x["response"]) for x in rows]
    )
    truth = [int(x["answer_type"] == "evasive") for x in rows]
    before = [bool(v >= 0.6) for v in sim_plain]
    after = [bool(v >= DEFAULT_EXEMPLAR_THRESHOLD) for v in np.maximum(sim_plain, sim_stripped)]
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

    from relevancy._prompt import EXAMPLES, chat_messages, output_schema, parse_output
    from relevancy.backends._local_generator import smollm_model_path

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


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    p.add_argument("--strictness", type=int, default=3)
    p.add_argument(
        "--prompts", default="french_last,french_first,no_french", help="API prompt variants to run"
    )
    p.add_argument("--skip-llm", action="store_true", help="only the exemplar detector")
    args = p.parse_args()
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
    emit(data, args.json)


if __name__ == "__main__":
    main()
