"""relevancy: compute and explain the Answer Relevancy of LLM answers.

>>> from relevancy import AnswerRelevancy
>>> metric = AnswerRelevancy()                      # embedded offline default  # doctest: +SKIP
>>> metric.score(user_input="When was the first super bowl?",
...              response="The first superbowl was held on Jan 15, 1967").value  # doctest: +SKIP
"""

from relevancy._cache import Cache, default_cache_dir
from relevancy._errors import (
    BackendError,
    ConfigError,
    EmbeddingError,
    GenerationError,
    InputError,
    RelevancyError,
)
from relevancy._formula import cosine_similarities, relevancy_score
from relevancy._io import (
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
from relevancy._metric import AnswerRelevancy
from relevancy._result import Generation, GenerationSet, QuestionScore, RelevancyResult
from relevancy._stats import bootstrap_ci, summarize
from relevancy.backends import make_embedder, make_generator
from relevancy.factory import build_metric, preflight
from relevancy.judge import JudgeCheck, check_judge

__version__ = "0.1.0"

__all__ = [
    "AnswerRelevancy",
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
