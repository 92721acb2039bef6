"""relevancy: compute and explain the Answer Relevancy of LLM answers.

>>> from relevancy import AnswerRelevancy, explain_result
>>> metric = AnswerRelevancy()                      # embedded offline default  # doctest: +SKIP
>>> result = metric.score(user_input="When was the first super bowl?",
...                       response="The first superbowl was held on Jan 15, 1967")  # doctest: +SKIP
>>> [r.title for r in explain_result(result).reasons]  # doctest: +SKIP

The package is layered by folder (see docs/ARCHITECTURE.md): ``core`` (what a score is),
``backends`` (generators, embedders, the cache), ``io`` (tables in and out), ``analysis``,
``runs`` (the run store), ``scoring`` (the metric and the one scoring loop), ``cli`` and
``dashboard``. Everything a library user needs is importable from here.
"""

import importlib
from typing import TYPE_CHECKING

#: where each public name lives. They are imported on first use (PEP 562), so that
#: ``import relevancy.cli`` (``relevancy --help``) does not pay for pandas, numpy and the models.
_HOMES = {
    "relevancy.analysis.explain": ("Explanation", "explain_result"),
    "relevancy.backends": ("make_embedder", "make_generator"),
    "relevancy.backends.cache": ("Cache",),
    "relevancy.core.formula": ("cosine_similarities", "relevancy_score"),
    "relevancy.core.result": ("Generation", "GenerationSet", "QuestionScore", "RelevancyResult"),
    "relevancy.core.stats": ("bootstrap_ci", "summarize"),
    "relevancy.errors": (
        "BackendError",
        "ConfigError",
        "EmbeddingError",
        "GenerationError",
        "InputError",
        "RelevancyError",
    ),
    "relevancy.io": (
        "RowProblem",
        "apply_mapping",
        "check_text",
        "guess_mapping",
        "inspect_rows",
        "normalize_columns",
        "read_table",
        "read_table_bytes",
        "results_to_frame",
        "write_results",
    ),
    "relevancy.paths": ("default_cache_dir",),
    "relevancy.runs": ("RunStore",),
    "relevancy.scoring.config": ("build_metric", "preflight"),
    "relevancy.scoring.files": ("FileRun", "Survey", "score_file", "survey"),
    "relevancy.scoring.judge": ("JudgeCheck", "check_judge"),
    "relevancy.scoring.metric": ("AnswerRelevancy",),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

if TYPE_CHECKING:  # what a type checker and an editor see; the same names as _HOMES
    from relevancy.analysis.explain import Explanation, explain_result
    from relevancy.backends import make_embedder, make_generator
    from relevancy.backends.cache import Cache
    from relevancy.core.formula import cosine_similarities, relevancy_score
    from relevancy.core.result import Generation, GenerationSet, QuestionScore, RelevancyResult
    from relevancy.core.stats import bootstrap_ci, summarize
    from relevancy.errors import (
        BackendError,
        ConfigError,
        EmbeddingError,
        GenerationError,
        InputError,
        RelevancyError,
    )
    from relevancy.io import (
        RowProblem,
        apply_mapping,
        check_text,
        guess_mapping,
        inspect_rows,
        normalize_columns,
        read_table,
        read_table_bytes,
        results_to_frame,
        write_results,
    )
    from relevancy.paths import default_cache_dir
    from relevancy.runs import RunStore
    from relevancy.scoring.config import build_metric, preflight
    from relevancy.scoring.files import FileRun, Survey, score_file, survey
    from relevancy.scoring.judge import JudgeCheck, check_judge
    from relevancy.scoring.metric import AnswerRelevancy

__version__ = "0.1.0"

__all__ = [
    "AnswerRelevancy",
    "explain_result",
    "Explanation",
    "RunStore",
    "score_file",
    "survey",
    "Survey",
    "FileRun",
    "build_metric",
    "preflight",
    "check_judge",
    "JudgeCheck",
    "RelevancyResult",
    "QuestionScore",
    "Generation",
    "GenerationSet",
    "Cache",
    "default_cache_dir",
    "make_generator",
    "make_embedder",
    "read_table",
    "read_table_bytes",
    "inspect_rows",
    "check_text",
    "guess_mapping",
    "apply_mapping",
    "RowProblem",
    "normalize_columns",
    "results_to_frame",
    "write_results",
    "summarize",
    "bootstrap_ci",
    "cosine_similarities",
    "relevancy_score",
    "RelevancyError",
    "InputError",
    "ConfigError",
    "BackendError",
    "GenerationError",
    "EmbeddingError",
    "__version__",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module the first time it is asked for."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'relevancy' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
