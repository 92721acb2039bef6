"""Batch scoring: order, failure capture, progress, concurrency, dedup and cross-row batching."""

import asyncio
import math

import pandas as pd
import pytest

from relevancy import AnswerRelevancy, InputError
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator


def make(script=None, delay=0.0, **kw):
    kw.setdefault("cache", False)
    return AnswerRelevancy(
        llm=FakeGenerator(script, delay=delay), embeddings=FakeEmbedder(dim=16), **kw
    )


def test_results_in_input_order_with_per_row_failures():
    def script(response, n):
        if response == "explode":
            raise RuntimeError("row-specific failure")
        return [(f"What about {response}?", False)] * n

    rows = [{"question": f"Q{i}?", "answer": "explode" if i == 3 else f"A{i}"} for i in range(8)]
    rows[5]["answer"] = ""
    results = make(script).score_many(rows)
    assert [r.user_input for r in results] == [f"Q{i}?" for i in range(8)]
    assert "row-specific failure" in results[3].error and math.isnan(results[3].value)
    assert "response is empty" in results[5].error
    assert all(r.ok for i, r in enumerate(results) if i not in (3, 5))


def test_dataframe_with_aliases_and_tuples():
    df = pd.DataFrame({"Query": ["a?", "b?"], "Output": ["x", None]})
    results = make().score_many(df)
    assert results[0].ok and "response" in results[1].error
    assert make().score_many([("a?", "x")])[0].ok


def test_bad_data_type_is_rejected():
    with pytest.raises(InputError, match="DataFrame or a list"):
        make().score_many({"user_input": "a"})
    with pytest.raises(InputError, match="missing column 'response'"):
        make().score_many(pd.DataFrame({"question": ["a"], "text": ["b"]}))


def test_progress_and_on_result_called_for_every_row():
    seen, progress = [], []
    make().score_many(
        [("q?", f"a{i}") for i in range(5)],
        progress=lambda d, t: progress.append((d, t)),
        on_result=lambda i, r: seen.append(i),
    )
    assert sorted(seen) == list(range(5))
    assert progress[-1] == (5, 5) and len(progress) == 5


def test_concurrency_is_bounded():
    active = peak = 0

    class Counting(FakeGenerator):
        async def agenerate(self, response, n, language=None):
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            return await super().agenerate(response, n)

    m = AnswerRelevancy(llm=Counting(), embeddings=FakeEmbedder(), cache=False)
    m.score_many([("q?", f"a{i}") for i in range(20)], concurrency=3)
    assert peak == 3


def test_same_user_input_embedded_once_and_batched_across_rows():
    emb = FakeEmbedder(dim=16)
    m = AnswerRelevancy(llm=FakeGenerator(), embeddings=emb, cache=False, noncommittal="llm")
    rows = [("Shared question?", f"answer {i}") for i in range(30)]
    m.score_many(rows, concurrency=10)
    texts = [t for call in emb.calls for t in call]
    assert texts.count("Shared question?") == 1
    assert len(texts) == len(set(texts))  # nothing embedded twice
    assert len(emb.calls) < len(rows) / 3  # batched across rows, not one call per row


def test_embedding_failure_is_captured_per_row():
    emb = FakeEmbedder(dim=4, fail=lambda texts: any("poison" in t for t in texts))
    m = AnswerRelevancy(llm=FakeGenerator(), embeddings=emb, cache=False, noncommittal="llm")
    results = m.score_many([("q?", "poison")], concurrency=1)
    assert "embedding failed" in results[0].error
    results = m.score_many([("q?", "fine")], concurrency=1)
    assert results[0].ok


def test_duplicate_rows_are_generated_once():
    gen = FakeGenerator(delay=0.01)
    m = AnswerRelevancy(llm=gen, embeddings=FakeEmbedder(), cache=False)
    results = m.score_many([("q?", "same answer")] * 6 + [("q?", "other")], concurrency=7)
    assert len(gen.calls) == 2
    assert len({r.value for r in results[:6]}) == 1


def test_failure_of_a_shared_generation_reaches_every_duplicate():
    def boom(response, n):
        raise RuntimeError("shared failure")

    m = AnswerRelevancy(llm=FakeGenerator(boom, delay=0.01), embeddings=FakeEmbedder(), cache=False)
    results = m.score_many([("q?", "same")] * 3, concurrency=3)
    assert all("shared failure" in r.error for r in results)


def test_blocking_api_works_inside_a_running_event_loop():
    async def inside():  # e.g. Jupyter, or Playwright's sync API in the same process
        m = make()
        return m.score(user_input="q?", response="a"), m.score_many([("q?", "b")])

    one, many = asyncio.run(inside())
    assert one.ok and many[0].ok


def test_default_concurrency_follows_the_generator():
    """The embedded generator serialises rows (4 at once is plenty); API rows mostly wait (16)."""
    api = AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), cache=False)
    assert api.concurrency == 16
    embedded = FakeGenerator()
    embedded.embedded = True
    assert AnswerRelevancy(llm=embedded, embeddings=FakeEmbedder(), cache=False).concurrency == 4
    given = AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), concurrency=2)
    assert given.concurrency == 2
    for bad in (0, -1, True, 2.5):
        with pytest.raises(InputError, match="concurrency must be a positive integer"):
            AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), concurrency=bad)
