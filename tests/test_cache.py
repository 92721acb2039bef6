"""The persistent cache: hits, identical values, keys that include every setting, two processes."""

import multiprocessing as mp

import numpy as np

from relevancy import AnswerRelevancy, Cache
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

ROWS = [("Where is France?", f"France is country number {i}.") for i in range(10)]


def test_rescoring_is_served_from_cache_with_identical_values(tmp_path):
    cache = Cache(tmp_path)
    gen, emb = FakeGenerator(), FakeEmbedder(dim=16)
    first = AnswerRelevancy(llm=gen, embeddings=emb, cache=cache).score_many(ROWS)
    calls = (len(gen.calls), len(emb.calls))
    gen2, emb2 = FakeGenerator(), FakeEmbedder(dim=16)
    second = AnswerRelevancy(llm=gen2, embeddings=emb2, cache=Cache(tmp_path)).score_many(ROWS)
    assert [r.value for r in first] == [r.value for r in second]
    assert calls[0] == len(ROWS) and len(gen2.calls) == 0 and len(emb2.calls) == 0
    assert all(r.cached for r in second) and not any(r.cached for r in first)
    stats = cache.stats()
    assert stats["generations"] == len(ROWS) and stats["embeddings"] > len(ROWS)


def test_key_includes_backend_settings_and_strictness(tmp_path):
    cache = Cache(tmp_path / "c.sqlite3")
    AnswerRelevancy(llm=FakeGenerator(name="a"), embeddings=FakeEmbedder(), cache=cache).score(
        user_input="q?", response="r"
    )
    other = FakeGenerator(name="b")
    AnswerRelevancy(llm=other, embeddings=FakeEmbedder(), cache=cache).score(
        user_input="q?", response="r"
    )
    assert len(other.calls) == 1  # a different generator fingerprint misses
    again = FakeGenerator(name="a")
    AnswerRelevancy(llm=again, embeddings=FakeEmbedder(), cache=cache, strictness=2).score(
        user_input="q?", response="r"
    )
    assert again.calls == [("r", 2)]  # a different N misses


def test_cache_false_bypasses(tmp_path):
    gen = FakeGenerator()
    for _ in range(2):
        AnswerRelevancy(llm=gen, embeddings=FakeEmbedder(), cache=False).score(
            user_input="q?", response="r"
        )
    assert len(gen.calls) == 2


def test_failed_api_generations_are_not_cached(tmp_path):
    from relevancy import Generation

    cache = Cache(tmp_path)
    flaky = FakeGenerator(lambda r, n: [Generation("", None, "HTTP 503")] * n)
    AnswerRelevancy(llm=flaky, embeddings=FakeEmbedder(), cache=cache).score(
        user_input="q?", response="r"
    )
    assert cache.stats()["generations"] == 0


def test_clear(tmp_path):
    cache = Cache(tmp_path)
    AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), cache=cache).score(
        user_input="q?", response="r"
    )
    cache.clear()
    assert cache.stats()["generations"] == 0 and cache.stats()["embeddings"] == 0


def _writer(path: str, worker: int) -> None:
    cache = Cache(path)
    for i in range(200):
        cache.put_embeddings({f"w{worker}-{i}": np.full(4, i, dtype=np.float32)})


def test_two_processes_can_write_at_once(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    found = Cache(tmp_path).get_embeddings([f"w{w}-{i}" for w in range(2) for i in range(200)])
    assert len(found) == 400 and found["w1-7"][0] == 7
