"""Ragas' side of ``bench.vs_ragas`` and ``bench.vs_ragas_api``, run in Ragas' own venv.

``python -m bench.ragas_side --mode MODE --rows-file ROWS.json --base-url URL`` prints one JSON
object: the wall time, each row's value, error, seconds and generated questions, Ragas'
version, its import time and its peak RSS. Ragas 0.4.3, strictness 3 unless said. Modes:

``collections``  its current API, the collections ``AnswerRelevancy``; rows ``--concurrency``
                 at a time (0: all at once, as its ``abatch_score`` does). ``--llm stock``:
                 ``llm_factory(model, client=...)`` as documented (instructor JSON mode);
                 ``--llm jsonschema``: instructor in JSON-schema mode (the server constrains
                 decoding to the schema: how Ragas can score with a 135M model at all).
``legacy``       ``evaluate()`` + ``ResponseRelevancy`` + ``LangchainLLMWrapper(ChatOpenAI)``,
                 Ragas' default ``RunConfig`` (16 workers; ``timeout`` from ``--row-timeout``
                 when given). No per-row times.
``parity``       no LLM: Ragas' two scoring paths (the legacy ``_calculate_score`` and the
                 collections ``ascore``) fed fixed questions, flags and vectors (the rows file
                 holds the cases).

Embeddings: ``--embeddings minilm``, our MiniLM int8 (imported from the repository through
``PYTHONPATH``) in Ragas' embedding interfaces, so both sides embed alike; or
``--embeddings api:MODEL``, the server's own embeddings as Ragas' documentation sets them up.
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
import numpy  # noqa: E402,F401 (first: Ragas' own import time is not counted twice)
from ragas.embeddings.base import BaseRagasEmbedding, BaseRagasEmbeddings  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402

IMPORT_S = time.perf_counter() - _t_import
KEY = "sk-bench"
_ROW_LOG: contextvars.ContextVar[list | None] = contextvars.ContextVar("row_log", default=None)


class _Vectors:
    """Our MiniLM, or a fixed text -> vector table (parity)."""

    def __init__(self, table: dict[str, list[float]] | None = None) -> None:
        self.table, self.model = table, None
        if table is None:
            from relevancy.backends import MiniLMEmbedder

            self.model = MiniLMEmbedder()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.table is not None:
            return [list(self.table[x]) for x in texts]
        return self.model.embed(texts).astype(float).tolist()


class ModernVectors(BaseRagasEmbedding):
    """Ragas' current embedding interface over :class:`_Vectors`."""

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


class LegacyVectors(BaseRagasEmbeddings):
    """Ragas' legacy (LangChain-style) embedding interface, over :class:`_Vectors` or over the
    server's embeddings (LangChain's own OpenAI embeddings need tiktoken's files, which an
    offline machine lacks)."""

    def __init__(self, vectors: _Vectors | None, base_url: str = "", model: str = "") -> None:
        super().__init__()
        self.vectors, self.base_url, self.model = vectors, base_url, model
        self._sync: t.Any = None
        self._async: t.Any = None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.vectors is not None:
            return self.vectors.embed(list(texts))
        import openai

        self._sync = self._sync or openai.OpenAI(base_url=self.base_url, api_key=KEY)
        out = self._sync.embeddings.create(model=self.model, input=list(texts))
        return [d.embedding for d in out.data]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.vectors is not None:
            return self.embed_documents(texts)
        import openai

        self._async = self._async or openai.AsyncOpenAI(base_url=self.base_url, api_key=KEY)
        out = await self._async.embeddings.create(model=self.model, input=list(texts))
        return [d.embedding for d in out.data]

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


class _ScriptedLLM(InstructorBaseRagasLLM):
    """Returns fixed outputs in order (parity: no model involved)."""

    def __init__(self, outputs: list[t.Any]) -> None:
        self.outputs = list(outputs)

    def generate(self, prompt: str, response_model: t.Any) -> t.Any:
        return self.outputs.pop(0)

    async def agenerate(self, prompt: str, response_model: t.Any) -> t.Any:
        return self.outputs.pop(0)


def _client(args: argparse.Namespace) -> t.Any:
    import openai

    timeout = args.row_timeout or 600.0
    return openai.AsyncOpenAI(base_url=args.base_url, api_key=KEY, timeout=timeout)


def collections_metric(args: argparse.Namespace) -> t.Any:
    import instructor
    from ragas.embeddings.base import embedding_factory
    from ragas.llms.base import InstructorLLM, InstructorModelArgs, llm_factory
    from ragas.metrics.collections import AnswerRelevancy

    client = _client(args)
    if args.llm == "stock":
        llm = llm_factory(args.model, client=client)
    else:
        patched = instructor.from_openai(client, mode=instructor.Mode.JSON_SCHEMA)
        llm = InstructorLLM(
            client=patched, model=args.model, provider="openai", model_args=InstructorModelArgs()
        )
    original = llm.agenerate

    async def recording(prompt: str, response_model: t.Any) -> t.Any:
        out = await original(prompt, response_model)
        row_log = _ROW_LOG.get()
        if row_log is not None:
            row_log.append({"question": out.question, "noncommittal": int(out.noncommittal)})
        return out

    llm.agenerate = recording  # each row's generated questions, for the identical-set count
    if args.embeddings == "minilm":
        embeddings = ModernVectors(_Vectors())
        embeddings.embed_text("warm-up")
    else:
        model = args.embeddings.removeprefix("api:")
        embeddings = embedding_factory("openai", model=model, client=client)
    return AnswerRelevancy(llm=llm, embeddings=embeddings, strictness=args.strictness)


async def _score(metric: t.Any, rows: list[dict], args: argparse.Namespace) -> list[dict]:
    limit = asyncio.Semaphore(args.concurrency if args.concurrency > 0 else max(1, len(rows)))

    async def one(row: dict) -> dict:
        async with limit:
            questions: list = []
            _ROW_LOG.set(questions)
            start = time.perf_counter()
            try:
                res = await asyncio.wait_for(
                    metric.ascore(user_input=row["user_input"], response=row["response"]),
                    timeout=args.row_timeout or None,
                )
                value, error = float(res.value), None
            except Exception as exc:  # a failed row is NaN, as in Ragas' evaluate()
                value, error = float("nan"), f"{type(exc).__name__}: {str(exc)[:160]}"
                print(f"    ragas row failed: {error}", file=sys.stderr, flush=True)
            return {
                "value": None if math.isnan(value) else value,
                "error": error,
                "seconds": time.perf_counter() - start,
                "generations": questions,
            }

    return await asyncio.gather(*(one(r) for r in rows))


def run_collections(args: argparse.Namespace, rows: list[dict]) -> dict:
    metric = collections_metric(args)
    start = time.perf_counter()
    results = asyncio.run(_score(metric, rows, args))
    return {"wall_s": time.perf_counter() - start, "rows": results}


def run_legacy(args: argparse.Namespace, rows: list[dict]) -> dict:
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import ResponseRelevancy

    if args.embeddings == "minilm":
        embeddings = LegacyVectors(_Vectors())
        embeddings.embed_query("warm-up")
    else:
        embeddings = LegacyVectors(None, args.base_url, args.embeddings.removeprefix("api:"))
    chat = ChatOpenAI(model=args.model, base_url=args.base_url, api_key=KEY)
    data = EvaluationDataset.from_list(
        [{"user_input": r["user_input"], "response": r["response"]} for r in rows]
    )
    config = RunConfig(timeout=int(args.row_timeout)) if args.row_timeout else RunConfig()
    start = time.perf_counter()
    result = evaluate(
        data,
        metrics=[ResponseRelevancy(strictness=args.strictness)],
        llm=LangchainLLMWrapper(chat),
        embeddings=embeddings,
        run_config=config,
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
        k = len(case["questions"])
        metric = ResponseRelevancy(strictness=k)
        metric.embeddings = LegacyVectors(vectors)
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
            llm=_ScriptedLLM(outputs), embeddings=ModernVectors(vectors), strictness=k
        )
        res = asyncio.run(m2.ascore(user_input=case["user_input"], response="(fixed)"))
        modern.append(float(res.value))
    return {"legacy": legacy, "collections": modern}


def _hwm() -> float:
    with open("/proc/self/status") as fh:
        return next((int(x.split()[1]) / 1024.0 for x in fh if x.startswith("VmHWM:")), math.nan)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["collections", "legacy", "parity"], required=True)
    p.add_argument("--rows-file", required=True, help="JSON list of rows (or parity cases)")
    p.add_argument("--base-url", default="")
    p.add_argument("--model", default="smollm2")
    p.add_argument("--llm", choices=["stock", "jsonschema"], default="stock")
    p.add_argument("--embeddings", default="minilm", help="minilm or api:MODEL")
    p.add_argument("--concurrency", type=int, default=1, help="rows at once; 0: all")
    p.add_argument("--row-timeout", type=float, default=0.0, help="seconds a row (0: none)")
    p.add_argument("--strictness", type=int, default=3)
    args = p.parse_args()
    with open(args.rows_file, encoding="utf-8") as fh:
        rows = json.load(fh)
    import ragas

    if args.mode == "parity":
        out = run_parity(rows)
    else:
        out = (run_legacy if args.mode == "legacy" else run_collections)(args, rows)
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


if __name__ == "__main__":
    raise SystemExit(main())
