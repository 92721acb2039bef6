"""Parity with Ragas: its own scoring code and ours on the same questions, flags and vectors.

Ragas is not a dependency of this project. It lives in a venv of its own, ``.venv-ragas`` at the
repository root, with ``ragas==0.4.3`` pinned (``bash scripts/setup.sh ragas`` creates it;
``scripts/test.sh`` does so before running the tests). A small script run by that interpreter
feeds every case to both of Ragas' scoring paths, with a scripted LLM and a text -> vector table
instead of models:

* the legacy ``ResponseRelevancy._calculate_score`` (what ``evaluate()`` uses);
* the collections ``AnswerRelevancy.ascore`` (Ragas' current API).

Ours is ``cosine_similarities`` + ``relevancy_score`` applied as ``AnswerRelevancy`` applies them
(the usable generated questions, the LLM's flags), and the metric itself with fake backends that
serve the same questions and vectors. Vectors are float32 values (what embedders return), sent to
both sides exactly, so agreement means a difference below 1e-9.

Where the two agree: every generated question non-empty and every vector non-zero, any number of
questions, any flags, negative cosines, vectors of any length. Where they do not, the test pins
what each side gives (ours, then Ragas' legacy path, then its collections path):

* some generated questions empty: ours and collections leave them out (their questions and their
  flags); legacy embeds the empty string, counts it in the mean, and counts its flag in the
  all-noncommittal rule.
* every generated question empty: ours NaN with the reason in ``result.error``; legacy NaN;
  collections 0.0.
* a question of blanks only ("   "): ours leaves it out like an empty one; both Ragas paths embed
  it and count it.
* a zero embedding vector: ours counts its similarity as 0; both Ragas paths divide by zero: NaN.

Without the venv the tests skip, loudly, naming the command that creates it; under CI (``CI``
set, as ``scripts/test.sh`` does) a missing venv is an error.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from relevancy import AnswerRelevancy, Generation
from relevancy.core.formula import cosine_similarities, relevancy_score
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

from helpers import skip_or_fail

# the Ragas side (its module fixture, in the first test asking for it) is bounded at 600 s
pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[1]
RAGAS_VERSION = "0.4.3"
RAGAS_PYTHON = Path(
    os.environ.get("RELEVANCY_RAGAS_PYTHON") or ROOT / ".venv-ragas" / "bin" / "python"
)
CREATE_VENV = "bash scripts/setup.sh ragas"
TOLERANCE = 1e-9
DIM = 8

# Run by the Ragas venv's interpreter: reads the cases (JSON file named in argv[1]), prints
# {"ragas_version": ..., "results": [{"legacy": x, "collections": y}, ...]} (NaN as NaN).
RAGAS_SIDE = r"""
import asyncio, json, os, sys, warnings

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
warnings.simplefilter("ignore")
try:
    import ragas
    from ragas.embeddings.base import BaseRagasEmbedding, BaseRagasEmbeddings
    from ragas.llms.base import InstructorBaseRagasLLM
    from ragas.metrics import ResponseRelevancy
    from ragas.metrics._answer_relevance import ResponseRelevanceOutput
    from ragas.metrics.collections import AnswerRelevancy
    from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceOutput
except ImportError as exc:
    print(f"ragas cannot be imported: {exc}", file=sys.stderr)
    sys.exit(3)


class Modern(BaseRagasEmbedding):
    def __init__(self, table):
        super().__init__()
        self.table = table

    def embed_text(self, text, **kw):
        return list(self.table[text])

    async def aembed_text(self, text, **kw):
        return self.embed_text(text)

    def embed_texts(self, texts, **kw):
        return [list(self.table[t]) for t in texts]

    async def aembed_texts(self, texts, **kw):
        return self.embed_texts(texts)


class Legacy(BaseRagasEmbeddings):
    def __init__(self, table):
        super().__init__()
        self.table = table

    def embed_query(self, text):
        return list(self.table[text])

    def embed_documents(self, texts):
        return [list(self.table[t]) for t in texts]

    async def aembed_query(self, text):
        return self.embed_query(text)

    async def aembed_documents(self, texts):
        return self.embed_documents(texts)


class Scripted(InstructorBaseRagasLLM):
    def __init__(self, outputs):
        self.outputs = list(outputs)

    def generate(self, prompt, response_model):
        return self.outputs.pop(0)

    async def agenerate(self, prompt, response_model):
        return self.outputs.pop(0)


with open(sys.argv[1], encoding="utf-8") as fh:
    cases = json.load(fh)
results = []
for case in cases:
    pairs = list(zip(case["questions"], case["flags"]))
    legacy = ResponseRelevancy(strictness=len(pairs))
    legacy.embeddings = Legacy(case["table"])
    answers = [ResponseRelevanceOutput(question=q, noncommittal=int(f)) for q, f in pairs]
    legacy_value = legacy._calculate_score(answers, {"user_input": case["user_input"]})
    outputs = [AnswerRelevanceOutput(question=q, noncommittal=int(f)) for q, f in pairs]
    modern = AnswerRelevancy(
        llm=Scripted(outputs), embeddings=Modern(case["table"]), strictness=len(pairs)
    )
    result = asyncio.run(modern.ascore(user_input=case["user_input"], response="(fixed)"))
    results.append({"legacy": float(legacy_value), "collections": float(result.value)})
json.dump({"ragas_version": ragas.__version__, "results": results}, sys.stdout)
"""


# ----------------------------------------------------------------------------- the cases


def make_cases() -> list[dict[str, Any]]:
    """Seeded cases of every kind; each holds its text -> vector table (float32 values)."""
    rng = np.random.default_rng(20251203)
    cases: list[dict[str, Any]] = []

    def vector(scale: float | None = None) -> np.ndarray:
        # unnormalised: lengths from 0.01 to 100
        length = 10 ** rng.uniform(-2, 2) if scale is None else scale
        return (rng.standard_normal(DIM) * length).astype(np.float32)

    def add(kind: str, questions: list[str], flags: list[bool], **vectors: np.ndarray) -> None:
        i = len(cases)
        user_input = f"user question {i}"
        table = {user_input: vectors.pop("user", None)}
        if table[user_input] is None:
            table[user_input] = vector()
        for q in questions:
            if q not in table:
                table[q] = vectors.get(q, vector())
        cases.append(
            {
                "kind": kind,
                "user_input": user_input,
                "questions": questions,
                "flags": [bool(f) for f in flags],
                "table": {t: v.astype(float).tolist() for t, v in table.items()},
            }
        )

    def flags_for(n: int, pattern: str) -> list[bool]:
        if pattern == "none":
            return [False] * n
        if pattern == "all":
            return [True] * n
        some = [bool(x) for x in rng.random(n) < 0.5]
        some[int(rng.integers(n))] = False  # some, not all
        return some

    # agree: non-empty questions, non-zero vectors, 1-5 questions, no/some/all flags
    for i in range(36):
        n = 1 + i % 5
        pattern = ("none", "some", "all")[i % 3] if n > 1 else ("none", "all")[i % 2]
        questions = [f"generated question {i}.{j}" for j in range(n)]
        extra: dict[str, np.ndarray] = {}
        if i % 4 == 0:  # questions pointing away from the user's question: negative cosines
            user = vector()
            extra = {"user": user}
            for q in questions:
                extra[q] = (-user * np.float32(rng.uniform(0.5, 3)) + vector(0.1)).astype(
                    np.float32
                )
        add("agree", questions, flags_for(n, pattern), **extra)
    # the same question twice (a model repeating itself)
    add("agree", ["same question", "same question", "other question"], [False, False, False])

    # some generated questions empty
    add("some_empty", ["q a", ""], [False, False])
    add("some_empty", ["q b", "", "q c"], [False, True, False])
    add("some_empty", ["", "q d", ""], [True, False, True])
    add("some_empty", ["q e", "q f", ""], [True, True, False])  # all non-empty ones flagged
    add("some_empty", ["q g", ""], [False, True])  # only the empty one flagged
    add("some_empty", ["q h", "", ""], [True, True, True])  # every flag set
    for i in range(4):
        n = 2 + i
        questions = [f"q empty-mix {i}.{j}" if j % 2 == 0 else "" for j in range(n)]
        add("some_empty", questions, flags_for(n, "some"))

    # every generated question empty
    add("all_empty", [""], [False])
    add("all_empty", ["", "", ""], [False, True, False])
    add("all_empty", ["", ""], [True, True])

    # questions of blanks only
    add("blank", ["q i", "   "], [False, False])
    add("blank", ["\t", "q j", " "], [False, False, True])

    # a zero vector
    add("zero_vector", ["q k", "q l"], [False, False], **{"q l": np.zeros(DIM, np.float32)})
    add("zero_vector", ["q m"], [False], **{"q m": np.zeros(DIM, np.float32)})
    return cases


CASES = make_cases()


def ours(case: dict[str, Any]) -> float:
    """Our formula as AnswerRelevancy applies it: usable questions only, the LLM's flags."""
    table = case["table"]
    usable = [(q, f) for q, f in zip(case["questions"], case["flags"]) if q.strip()]
    if not usable:
        return relevancy_score([], [])
    sims = cosine_similarities(
        np.array([table[q] for q, _ in usable]), np.array(table[case["user_input"]])
    )
    return relevancy_score(sims.tolist(), [f for _, f in usable])


def ragas_rule(case: dict[str, Any], *, drop_empty: bool) -> float:
    """Ragas' arithmetic written out: the mean cosine of the questions it keeps, times 0 when
    all the flags it keeps are set. Legacy keeps every question; collections drops ``""``."""
    kept = [
        (q, f) for q, f in zip(case["questions"], case["flags"]) if not (drop_empty and q == "")
    ]
    u = np.array(case["table"][case["user_input"]])
    vs = np.array([case["table"][q] for q, _ in kept])
    cos = vs @ u / (np.linalg.norm(vs, axis=1) * np.linalg.norm(u))
    return float(cos.mean() * int(not all(f for _, f in kept)))


def same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) < TOLERANCE


def of_kind(kind: str) -> list[int]:
    return [i for i, c in enumerate(CASES) if c["kind"] == kind]


# ----------------------------------------------------------------------------- our side


def score_with_the_metric(case: dict[str, Any]):
    table = case["table"]
    generations = [Generation(q, f) for q, f in zip(case["questions"], case["flags"])]
    metric = AnswerRelevancy(
        llm=FakeGenerator(lambda response, n: generations),
        embeddings=FakeEmbedder(table),
        strictness=len(generations),
        noncommittal="llm",
        mode="ragas",
        cache=False,
    )
    return metric.score(user_input=case["user_input"], response="(fixed)")


def test_the_metric_scores_as_the_formula_does():
    for case in CASES:
        r = score_with_the_metric(case)
        assert same(r.value, ours(case)), (case["kind"], r.value, ours(case))
        if case["kind"] == "all_empty":
            assert r.error and "empty question" in r.error
        else:
            assert r.error is None


def test_the_cases_cover_what_the_parity_claims():
    agree = [CASES[i] for i in of_kind("agree")]
    values = [ours(c) for c in agree]
    assert sum(v < 0 for v in values) >= 5  # negative scores, not clipped
    assert sum(v == 0.0 for v in values) >= 5  # all flagged: zeroed
    assert {len(c["questions"]) for c in agree} == {1, 2, 3, 4, 5}
    lengths = [np.linalg.norm(v) for c in agree for v in c["table"].values()]
    assert min(lengths) < 0.1 and max(lengths) > 10  # far from unit length


# ----------------------------------------------------------------------------- Ragas' side


def ragas_unavailable(reason: str) -> None:
    """Skip, loudly; under CI, fail."""
    skip_or_fail(
        f"RAGAS PARITY NOT CHECKED: {reason}. Create the Ragas venv with `{CREATE_VENV}` "
        "(scripts/test.sh does this)"
    )


def run_ragas_side(python: Path, work: Path) -> list[dict[str, float]]:
    """Both Ragas paths on every case, run by ``python`` (the Ragas venv's) in ``work``."""
    if not python.exists():
        ragas_unavailable(f"no Ragas venv at {python}")
    (work / "cases.json").write_text(json.dumps(CASES), encoding="utf-8")
    (work / "ragas_side.py").write_text(RAGAS_SIDE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["RAGAS_DO_NOT_TRACK"] = "true"
    proc = subprocess.run(
        [str(python), "ragas_side.py", "cases.json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == 3:
        ragas_unavailable(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["ragas_version"] == RAGAS_VERSION, (
        f"the Ragas venv has ragas {out['ragas_version']}; these tests pin {RAGAS_VERSION}: "
        f"remove .venv-ragas and run `{CREATE_VENV}`"
    )
    assert len(out["results"]) == len(CASES)
    return out["results"]


@pytest.fixture(scope="module")
def ragas(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, float]]:
    return run_ragas_side(RAGAS_PYTHON, tmp_path_factory.mktemp("ragas-parity"))


def test_ragas_both_paths_equal_ours_on_ordinary_cases(ragas):
    for i in of_kind("agree"):
        want = ours(CASES[i])
        assert not math.isnan(want)
        assert same(ragas[i]["legacy"], want), (i, ragas[i], want)
        assert same(ragas[i]["collections"], want), (i, ragas[i], want)


def test_some_empty_questions_collections_agrees_legacy_counts_them(ragas):
    differ = 0
    for i in of_kind("some_empty"):
        case, got = CASES[i], ragas[i]
        # collections leaves empty questions (and their flags) out, as we do
        assert same(got["collections"], ours(case)), (i, got, ours(case))
        # legacy embeds "" and counts it, and counts its flag in the all-noncommittal rule
        assert same(got["legacy"], ragas_rule(case, drop_empty=False)), (i, got)
        differ += not same(got["legacy"], ours(case))
    assert differ >= len(of_kind("some_empty")) - 1  # a real difference, not a rounding one
    # the sharpest case: every non-empty question flagged, the empty one not
    i = next(i for i in of_kind("some_empty") if CASES[i]["questions"] == ["q e", "q f", ""])
    assert ours(CASES[i]) == 0.0 and ragas[i]["collections"] == 0.0
    assert ragas[i]["legacy"] != 0.0


def test_all_questions_empty_ours_nan_legacy_nan_collections_zero(ragas):
    for i in of_kind("all_empty"):
        assert math.isnan(ours(CASES[i]))
        assert math.isnan(ragas[i]["legacy"])
        assert ragas[i]["collections"] == 0.0


def test_blank_questions_we_leave_out_ragas_counts(ragas):
    for i in of_kind("blank"):
        case, got = CASES[i], ragas[i]
        want = ragas_rule(case, drop_empty=True)  # "   " is not "": kept by both paths
        assert same(got["legacy"], want) and same(got["collections"], want), (i, got, want)
        assert not same(want, ours(case))


def test_zero_vectors_we_count_as_zero_ragas_gives_nan(ragas):
    for i in of_kind("zero_vector"):
        assert not math.isnan(ours(CASES[i]))
        assert math.isnan(ragas[i]["legacy"]) and math.isnan(ragas[i]["collections"])
    single = next(i for i in of_kind("zero_vector") if len(CASES[i]["questions"]) == 1)
    assert ours(CASES[single]) == 0.0


@pytest.mark.parametrize(
    ("ci", "outcome"), [("1", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_a_missing_venv_fails_in_ci_and_skips_loudly_elsewhere(monkeypatch, tmp_path, ci, outcome):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match=r"RAGAS PARITY NOT CHECKED: no Ragas venv .*setup.sh ragas"):
        run_ragas_side(tmp_path / "no-venv" / "bin" / "python", tmp_path)


def test_a_venv_without_ragas_fails_in_ci_and_skips_loudly_elsewhere(monkeypatch, tmp_path):
    import sys

    monkeypatch.setenv("CI", "1")
    # this interpreter has no ragas (it must not: Ragas is kept out of the main venv)
    with pytest.raises(pytest.fail.Exception, match="ragas cannot be imported"):
        run_ragas_side(Path(sys.executable), tmp_path)
