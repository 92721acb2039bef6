"""Ragas' side of ``bench/vs_ragas.py``; runs in the separate venv ``bench/.venv-ragas``.

Prints one JSON object on stdout. Modes:

``jsonschema``  Ragas' collections ``AnswerRelevancy`` (its current API) with instructor in
                JSON-schema mode (the server constrains decoding to the output schema): the
                set-up under which Ragas can score with this model at all.
``stock``       the same metric built the documented way: ``llm_factory(model, client=...)``
                (instructor JSON mode).
``legacy``      the legacy ``evaluate()`` + ``ResponseRelevancy`` with a LangChain ChatOpenAI,
                Ragas' default RunConfig except ``timeout`` (bounded here to save time).
``parity``      no LLM: Ragas' scoring code fed fixed questions, flags and embedding vectors
                (both the legacy ``_calculate_score`` and the collections metric's ``ascore``).

Embeddings are the same all-MiniLM-L6-v2 int8 ONNX model as our side (our ``MiniLMEmbedder``,
imported from the repository through ``PYTHONPATH``), wrapped in Ragas' embedding interfaces.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import math
import os
import sys
import time
import typing as t

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

_t_import = time.perf_counter()
import numpy as np  # noqa: E402
from ragas.embeddings.base import BaseRagasEmbedding, BaseRagasEmbeddings  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

IMPORT_S = time.perf_counter() - _t_import

_ROW_LOG: contextvars.ContextVar[list | None] = contextvars.ContextVar("row_log", default=None)


class _Vectors:
    """Either our MiniLM (``embed``) or a fixed text -> vector table (parity)."""

    def __init__(self, table: dict[str, list[float]] | None = None) -> None:
        self.table = table
        self.model = None
        if table is None:
            from relevancy.backends import MiniLMEmbedder

            self.model = MiniLMEmbedder()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.table is not None:
            return [list(self.table[x]) for x in texts]
        return self.model.embed(texts).astype(float).tolist()


class ModernMiniLM(BaseRagasEmbedding):
    """Ragas' current embedding interface (``aembed_text``/``aembed_texts``)."""

    def __init__(self, vectors: _Vectors) -> None:
        super().__init__()
        self.vectors = vectors

    def embed_text(self, text: str, **kwargs: t.Any) -> list[float]:
        return self.vectors.embed([text])[0]

    async def aembed_text(self, text: str, **kwargs: t.Any) -> list[float]:
        return self.embed_text(text)

    def embed_texts(self, texts: list[str], **kwargs: t.Any) -> list[list[float]]:
        return self.vectors.embed(list(texts))

    async def aembed_texts(self, texts: list[str], **kwargs: t.Any) -> list[list[float]]:
        return self.embed_texts(texts)


class LegacyMiniLM(BaseRagasEmbeddings):
    """Ragas' legacy (LangChain-style) embedding interface."""

    def __init__(self, vectors: _Vectors) -> None:
        super().__init__()
        self.vectors = vectors

    def embed_query(self, text: str) -> list[float]:
        return self.vectors.embed([text])[0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.vectors.embed(list(texts))

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)


class _ScriptedLLM(InstructorBaseRagasLLM):
    """Returns fixed outputs in order (parity: no model involved)."""

    def __init__(self, outputs: list[t.Any]) -> None:
        self.outputs = list(outputs)

    def generate(self, prompt: str, response_model: t.Any) -> t.Any:
        return self.outputs.pop(0)

    async def agenerate(self, prompt: str, response_model: t.Any) -> t.Any:
        return self.outputs.pop(0)


def _recording(llm: t.Any) -> t.Any:
    """Record each structured output of ``llm`` in the current row's log."""
    original = llm.agenerate

    async def agenerate(prompt: str, response_model: t.Any) -> t.Any:
        out = await original(prompt, response_model)
        log = _ROW_LOG.get()
        if log is not None:
            log.append({"question": out.question, "noncommittal": int(out.noncommittal)})
        return out

    llm.agenerate = agenerate
    return llm


def _client(base_url: str, timeout: float) -> t.Any:
    import openai

    return openai.AsyncOpenAI(base_url=base_url, api_key="no-key-needed", timeout=timeout)


def _collections_metric(mode: str, base_url: str, model: str, timeout: float) -> t.Any:
    import instructor
    from ragas.llms.base import InstructorLLM, InstructorModelArgs, llm_factory
    from ragas.metrics.collections import AnswerRelevancy

    client = _client(base_url, timeout)
    if mode == "stock":
        llm = llm_factory(model, client=client)
    else:
        patched = instructor.from_openai(client, mode=instructor.Mode.JSON_SCHEMA)
        llm = InstructorLLM(
            client=patched, model=model, provider="openai", model_args=InstructorModelArgs()
        )
    llm = _recording(llm)
    return AnswerRelevancy(llm=llm, embeddings=ModernMiniLM(_Vectors()), strictness=3)


async def _score_collections(
    metric: t.Any, rows: list[dict], concurrency: int, row_timeout: float
) -> list[dict]:
    limit = asyncio.Semaphore(concurrency)

    async def one(row: dict) -> dict:
        async with limit:
            log: list = []
            _ROW_LOG.set(log)
            start = time.perf_counter()
            try:
                res = await asyncio.wait_for(
                    metric.ascore(user_input=row["user_input"], response=row["response"]),
                    timeout=row_timeout,
                )
                value, error = float(res.value), None
            except Exception as exc:  # a failed row is NaN, as in Ragas' evaluate()
                value, error = float("nan"), f"{type(exc).__name__}: {str(exc)[:160]}"
            seconds = time.perf_counter() - start
            print(
                f"    ragas row: {seconds:.1f} s, {len(log)} generations, value {value:.3f}"
                + (f", {error}" if error else ""),
                file=sys.stderr,
                flush=True,
            )
            return {
                "value": None if math.isnan(value) else value,
                "error": error,
                "seconds": seconds,
                "generations": log,
            }

    return await asyncio.gather(*(one(r) for r in rows))


def run_collections(args: argparse.Namespace, rows: list[dict]) -> dict:
    metric = _collections_metric(args.mode, args.base_url, args.model, args.row_timeout)
    metric.embeddings.embed_text("warm-up")
    start = time.perf_counter()
    results = asyncio.run(_score_collections(metric, rows, args.concurrency, args.row_timeout))
    return {"wall_s": time.perf_counter() - start, "rows": results}


def run_legacy(args: argparse.Namespace, rows: list[dict]) -> dict:
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import ResponseRelevancy

    chat = ChatOpenAI(model=args.model, base_url=args.base_url, api_key="no-key-needed")
    emb = LegacyMiniLM(_Vectors())
    emb.embed_query("warm-up")
    data = EvaluationDataset.from_list(
        [{"user_input": r["user_input"], "response": r["response"]} for r in rows]
    )
    start = time.perf_counter()
    result = evaluate(
        data,
        metrics=[ResponseRelevancy(strictness=3)],
        llm=LangchainLLMWrapper(chat),
        embeddings=emb,
        run_config=RunConfig(timeout=int(args.row_timeout)),
        show_progress=False,
        raise_exceptions=False,
    )
    wall = time.perf_counter() - start
    values = [float(v) for v in result.to_pandas()["answer_relevancy"].tolist()]
    return {
        "wall_s": wall,
        "rows": [
            {"value": None if math.isnan(v) else v, "error": None, "seconds": None} for v in values
        ],
    }


def run_parity(cases: list[dict]) -> dict:
    """Ragas' two scoring paths on fixed questions, flags and vectors."""
    from ragas.metrics import ResponseRelevancy
    from ragas.metrics._answer_relevance import ResponseRelevanceOutput
    from ragas.metrics.collections import AnswerRelevancy
    from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceOutput

    legacy, modern = [], []
    for case in cases:
        table = {case["user_input"]: case["user_input_vector"]}
        table.update(dict(zip(case["questions"], case["question_vectors"])))
        vectors = _Vectors(table)
        metric = ResponseRelevancy(strictness=len(case["questions"]))
        metric.embeddings = LegacyMiniLM(vectors)
        answers = [
            ResponseRelevanceOutput(question=q, noncommittal=int(f))
            for q, f in zip(case["questions"], case["flags"])
        ]
        legacy.append(float(metric._calculate_score(answers, {"user_input": case["user_input"]})))
        outputs = [
            AnswerRelevanceOutput(question=q, noncommittal=int(f))
            for q, f in zip(case["questions"], case["flags"])
        ]
        m2 = AnswerRelevancy(
            llm=_ScriptedLLM(outputs),
            embeddings=ModernMiniLM(vectors),
            strictness=len(case["questions"]),
        )
        res = asyncio.run(m2.ascore(user_input=case["user_input"], response="(fixed)"))
        modern.append(float(res.value))
    return {"legacy": legacy, "collections": modern}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["jsonschema", "stock", "legacy", "parity"], required=True)
    p.add_argument("--base-url", default="")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--rows-file", required=True, help="JSON list of rows (or parity cases)")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--row-timeout", type=float, default=180.0)
    args = p.parse_args()
    with open(args.rows_file, encoding="utf-8") as fh:
        rows = json.load(fh)
    import ragas

    if args.mode == "parity":
        out = run_parity(rows)
    elif args.mode == "legacy":
        out = run_legacy(args, rows)
    else:
        out = run_collections(args, rows)
    out.update(
        {
            "mode": args.mode,
            "ragas_version": ragas.__version__,
            "import_s": IMPORT_S,
            "concurrency": args.concurrency,
            "peak_rss_mb": _hwm(),
        }
    )
    json.dump(out, sys.stdout, default=float)
    return 0


def _hwm() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


if __name__ == "__main__":
    _ = np  # numpy is imported first so Ragas' own import time is not counted twice
    raise SystemExit(main())
