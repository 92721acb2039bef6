"""Ragas' side of ``bench/vs_ragas_api.py``; runs in the separate venv ``bench/.venv-ragas``.

Ragas 0.4.3 against an OpenAI-compatible API, set up the way its documentation shows, with its
own OpenAI embeddings on the same server. Prints one JSON object on stdout. Modes:

``collections``  its current API: ``AnswerRelevancy(llm=llm_factory(model, client=...),
                 embeddings=embedding_factory("openai", model, client=...))``. Rows are scored
                 ``--concurrency`` at a time; 0 means all at once, which is what the metric's
                 own ``abatch_score`` does (``asyncio.gather`` over every row).
``legacy``       ``evaluate()`` with ``ResponseRelevancy`` and ``LangchainLLMWrapper(ChatOpenAI)``
                 and Ragas' default ``RunConfig`` (16 workers); embeddings through the same
                 API (a small wrapper: LangChain's OpenAI embeddings need tiktoken's files,
                 which an offline machine lacks). No per-row times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
import typing as t

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")


def _async_client(base_url: str) -> t.Any:
    import openai

    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench")


def collections_metric(args: argparse.Namespace) -> t.Any:
    from ragas.embeddings.base import embedding_factory
    from ragas.llms.base import llm_factory
    from ragas.metrics.collections import AnswerRelevancy

    client = _async_client(args.base_url)
    llm = llm_factory(args.model, client=client)
    embeddings = embedding_factory("openai", model=args.embedding_model, client=client)
    return AnswerRelevancy(llm=llm, embeddings=embeddings, strictness=args.strictness)


async def score_collections(metric: t.Any, rows: list[dict], concurrency: int) -> list[dict]:
    limit = asyncio.Semaphore(concurrency if concurrency > 0 else max(1, len(rows)))

    async def one(row: dict) -> dict:
        async with limit:
            start = time.perf_counter()
            try:
                res = await metric.ascore(user_input=row["user_input"], response=row["response"])
                value, error = float(res.value), None
            except Exception as exc:  # a failed row is NaN, as in Ragas' evaluate()
                value, error = float("nan"), f"{type(exc).__name__}: {str(exc)[:160]}"
            return {
                "value": None if math.isnan(value) else value,
                "error": error,
                "seconds": time.perf_counter() - start,
            }

    return await asyncio.gather(*(one(r) for r in rows))


def run_collections(args: argparse.Namespace, rows: list[dict]) -> dict:
    metric = collections_metric(args)
    start = time.perf_counter()
    results = asyncio.run(score_collections(metric, rows, args.concurrency))
    return {"wall_s": time.perf_counter() - start, "rows": results}


def run_legacy(args: argparse.Namespace, rows: list[dict]) -> dict:
    import openai
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.embeddings.base import BaseRagasEmbeddings
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import ResponseRelevancy

    sync, aio = openai.OpenAI(base_url=args.base_url, api_key="sk-bench"), None

    class APIEmbeddings(BaseRagasEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            out = sync.embeddings.create(model=args.embedding_model, input=list(texts))
            return [d.embedding for d in out.data]

        async def aembed_query(self, text: str) -> list[float]:
            return (await self.aembed_documents([text]))[0]

        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            nonlocal aio
            aio = aio or _async_client(args.base_url)
            out = await aio.embeddings.create(model=args.embedding_model, input=list(texts))
            return [d.embedding for d in out.data]

    chat = ChatOpenAI(model=args.model, base_url=args.base_url, api_key="sk-bench")
    data = EvaluationDataset.from_list(
        [{"user_input": r["user_input"], "response": r["response"]} for r in rows]
    )
    start = time.perf_counter()
    result = evaluate(
        data,
        metrics=[ResponseRelevancy(strictness=args.strictness)],
        llm=LangchainLLMWrapper(chat),
        embeddings=APIEmbeddings(),
        run_config=RunConfig(),
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


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["collections", "legacy"], required=True)
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", default="toy-chat")
    p.add_argument("--embedding-model", default="toy-embed")
    p.add_argument("--rows-file", required=True, help="JSON list of rows")
    p.add_argument("--concurrency", type=int, default=0, help="rows at once; 0: all")
    p.add_argument("--strictness", type=int, default=3)
    args = p.parse_args()
    with open(args.rows_file, encoding="utf-8") as fh:
        rows = json.load(fh)
    import ragas

    out = run_legacy(args, rows) if args.mode == "legacy" else run_collections(args, rows)
    out.update({"mode": args.mode, "ragas_version": ragas.__version__})
    json.dump(out, sys.stdout, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
