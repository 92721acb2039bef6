"""The persistent cache: hits, identical values, keys that include every setting, two processes."""

import multiprocessing as mp
import sqlite3
import sys

import numpy as np
import pytest

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


def _opener(kind: str, folders: list[str], barrier) -> None:
    from relevancy import RunStore

    failed = []
    for folder in folders:
        barrier.wait(timeout=60)  # both processes open the same new file at the same moment
        try:
            Cache(folder) if kind == "cache" else RunStore(folder)
        except Exception as exc:
            failed.append(str(exc))
    if failed:
        sys.exit(f"{len(failed)} of {len(folders)} opens failed, first: {failed[0]}")


@pytest.mark.parametrize("kind", ["cache", "store"])
def test_two_processes_opening_a_new_file_at_the_same_moment_both_open_it(tmp_path, kind):
    """Switching a new file to WAL needs it to itself, and SQLite says "locked" at once to the
    second process that asks (no busy wait): without asking again, 50 opens in step failed
    every time here, 2.5% of unsynchronised pairs (CI of Dec 7)."""
    folders = [str(tmp_path / str(i)) for i in range(50 if kind == "cache" else 20)]
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_opener, args=(kind, folders, barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]


class _LockedConnection:
    """Answers "database is locked" to the first ``locked`` WAL requests (logic only)."""

    def __init__(self, locked: int, error: str = "database is locked") -> None:
        self.locked, self.error, self.calls = locked, error, 0

    def execute(self, sql: str):
        self.calls += 1
        if self.calls <= self.locked:
            raise sqlite3.OperationalError(self.error)


def test_wal_is_asked_for_again_while_locked_and_other_errors_are_raised_at_once():
    from relevancy._sqlite import use_wal

    db = _LockedConnection(locked=3)
    use_wal(db)
    assert db.calls == 4
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        use_wal(other := _LockedConnection(locked=1, error="disk I/O error"))
    assert other.calls == 1
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        use_wal(_LockedConnection(locked=10**6), wait=0.2)


# ------------------------------------------------------------------ the real generators' keys
# Each test scores one row twice with the same settings (the second is served from the cache,
# which shows the test can see a hit), then once with one setting changed, which must miss.


CALLS: list[str] = []  # responses the stubbed embedded generator was asked about


def _stubbed_smollm(**options):
    """The embedded generator with its fingerprint as shipped; the model itself is not run."""
    from relevancy.backends import SmolLMGenerator
    from relevancy.core.result import Generation, GenerationSet

    class Stubbed(SmolLMGenerator):
        def generate(self, response, n):
            CALLS.append(response)
            return GenerationSet([Generation(f"What is {response}?")] * n, model="stub")

    return Stubbed(**options)


def _generated(llm, cache) -> bool:
    """Score one row; True when the generator ran (the cache missed)."""
    before = len(CALLS)
    AnswerRelevancy(llm=llm, embeddings=FakeEmbedder(), cache=cache).score(
        user_input="q?", response="r"
    )
    return len(CALLS) > before


@pytest.mark.parametrize(
    "change", [{"seed": 1}, {"temperature": 0.2}, {"max_response_chars": 100}], ids=str
)
def test_embedded_generator_settings_are_in_the_key(tmp_path, change):
    cache = Cache(tmp_path)
    assert _generated(_stubbed_smollm(), cache)
    assert not _generated(_stubbed_smollm(), cache)
    assert _generated(_stubbed_smollm(**change), cache)


@pytest.mark.parametrize("name", ["INSTRUCTION", "EXAMPLES", "QUESTION_GRAMMAR"])
def test_embedded_generator_prompt_is_in_the_key(tmp_path, monkeypatch, name):
    from relevancy.backends import _local_generator

    cache = Cache(tmp_path)
    assert _generated(_stubbed_smollm(), cache)
    assert not _generated(_stubbed_smollm(), cache)
    value = getattr(_local_generator, name)
    edited = (
        value + (("An answer.", "A question?"),) if name == "EXAMPLES" else value + " Be brief."
    )
    monkeypatch.setattr(_local_generator, name, edited)
    assert _generated(_stubbed_smollm(), cache)


def _openai_chats(srv, cache, **options) -> int:
    """Score one row with the OpenAI-compatible generator; the chat requests it sent."""
    from relevancy import make_generator

    before = sum(r["path"].endswith("/chat/completions") for r in srv.requests)
    llm = make_generator("openai:toy-chat", base_url=srv.base_url, **options)
    r = AnswerRelevancy(llm=llm, embeddings=FakeEmbedder(), cache=cache).score(
        user_input="Where is Paris?", response="Paris is in France."
    )
    assert r.ok, r.error
    return sum(r["path"].endswith("/chat/completions") for r in srv.requests) - before


@pytest.mark.parametrize("change", [{"seed": 7}, {"temperature": 0.2}], ids=str)
def test_openai_generator_settings_are_in_the_key(tmp_path, change, toy_server):
    cache = Cache(tmp_path)
    assert _openai_chats(toy_server, cache) == 1
    assert _openai_chats(toy_server, cache) == 0
    assert _openai_chats(toy_server, cache, **change) == 1
    assert {k: toy_server.requests[-1]["body"][k] for k in change} == change


@pytest.mark.parametrize("name", ["INSTRUCTION", "EXAMPLES"])
def test_openai_generator_prompt_is_in_the_key(tmp_path, monkeypatch, name, toy_server):
    from relevancy.backends import _openai
    from relevancy.core import prompt as _prompt

    cache = Cache(tmp_path)
    assert _openai_chats(toy_server, cache) == 1
    assert _openai_chats(toy_server, cache) == 0
    value = getattr(_prompt, name)
    if name == "EXAMPLES":
        edited = value[:-1]
        # chat_messages took the examples as a default argument when it was defined
        monkeypatch.setattr(_prompt.chat_messages, "__kwdefaults__", {"examples": edited})
    else:
        edited = value + " Be brief."
    # as an edit of relevancy/core/prompt.py would: the prompt sent and the fingerprint's input
    monkeypatch.setattr(_prompt, name, edited)
    monkeypatch.setattr(_openai, name, edited)
    assert _openai_chats(toy_server, cache) == 1
    sent = toy_server.requests[-1]["body"]["messages"]
    if name == "INSTRUCTION":
        assert sent[0]["content"].endswith("Be brief.")
    else:
        assert len(sent) == 1 + 2 * len(edited) + 1


def test_the_embedding_memo_is_bounded():
    import asyncio

    from relevancy.backends import EmbeddingService

    service = EmbeddingService(FakeEmbedder(dim=8), None, memo_size=50)
    texts = [f"text number {i}" for i in range(400)]
    first = asyncio.run(service.embed(texts))
    assert len(service._memo) == 50 and service.backend_texts == 400
    assert list(service._memo) == texts[-50:]  # the ones used last
    again = asyncio.run(service.embed(texts[-50:]))  # from the memo: no backend call
    assert service.backend_texts == 400 and np.allclose(again, first[-50:])
    assert EmbeddingService(FakeEmbedder(dim=8), None).memo_size == 10_000


def test_a_text_embedded_while_another_row_reads_the_cache_is_not_embedded_again(tmp_path):
    """The race CI hit: row A misses the memo and reads the disk cache (in a thread); row B has
    the same question embedded meanwhile; A must take B's vector, not send the text again."""
    import asyncio
    import threading

    from relevancy.backends import EmbeddingService

    class HeldCache:
        """A cache whose first read waits until it is let go."""

        def __init__(self) -> None:
            self.release = threading.Event()
            self.reads = 0

        def get_embeddings(self, keys):
            self.reads += 1
            if self.reads == 1:
                assert self.release.wait(10)
            return {}

        def put_embeddings(self, items) -> None:
            pass

    emb = FakeEmbedder(dim=8)
    cache = HeldCache()
    service = EmbeddingService(emb, cache)  # type: ignore[arg-type]

    async def both():
        a = asyncio.create_task(service.embed_counted(["Where is France?"]))
        await asyncio.sleep(0.05)  # A is inside its cache read
        b = await service.embed_counted(["Where is France?"])  # B has it embedded
        cache.release.set()
        return await a, b

    (va, ta), (vb, tb) = asyncio.run(both())
    assert emb.calls == [["Where is France?"]]  # one backend call for the shared text
    assert np.allclose(va, vb) and ta == 0  # A sent nothing, so it pays for nothing
