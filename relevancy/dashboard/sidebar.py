"""The sidebar shared by all pages: navigation, active run, threshold and scoring settings.

Backends are built once per distinct configuration with ``st.cache_resource``. The API key is
read from ``OPENAI_API_KEY``, ``st.secrets`` or a password field; it is never displayed, never
part of :class:`Settings` (which is what a run saves) and is registered for redaction.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from typing import Any

import streamlit as st

from relevancy import __version__
from relevancy._redact import register_secret
from relevancy.dashboard.state import active_run, bind, list_runs, set_active_run
from relevancy.dashboard.ui import nav_links

__all__ = ["Settings", "render_sidebar", "get_api_key", "get_metric", "get_embedder_for"]

BACKENDS = {
    "embedded": "Embedded (offline, no key)",
    "openai": "OpenAI",
    "compatible": "OpenAI-compatible server",
}
NONCOMMITTAL = {
    "auto": "auto (LLM flag for API models, exemplars for the embedded one)",
    "exemplars": "exemplars (similarity to evasive replies)",
    "llm": "llm (the generator's own flag)",
    "off": "off (never zero a score)",
}
MODES = ["auto", "ragas", "focus"]
MODE_HELP = (
    "What the score is.  \n"
    "**ragas**: the Ragas Answer Relevancy, exactly (mean similarity of the questions an LLM "
    "rebuilds from the answer).  \n"
    "**focus**: a sentence-level score (how closely each sentence of the answer stays on the "
    "question, blended with the Ragas value), measured to agree better with people on long "
    "answers with the embedded model.  \n"
    "**auto**: focus for the embedded models, ragas for API models.  \n"
    "Every row also keeps its Ragas value, whatever the mode."
)
EMBEDDED_LLM = "SmolLM2-135M-Instruct (Q4_1, llama.cpp)"
EMBEDDED_EMB = "all-MiniLM-L6-v2 (int8 ONNX)"


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

    def record(self) -> dict[str, Any]:
        """The settings saved with a run (no key, only where it came from)."""
        data = asdict(self)
        data.pop("threshold")
        return data

    def describe(self) -> str:
        """One line naming the mode and models, for captions."""
        if self.backend == "embedded":
            return (
                f"embedded offline models ({EMBEDDED_LLM} writes the questions, "
                f"{EMBEDDED_EMB} embeds them)"
            )
        where = "OpenAI API" if self.backend == "openai" else f"server at {self.base_url}"
        llm, emb = self.llm.partition(":")[2], self.embeddings.partition(":")[2]
        return f"{where} ({llm} writes the questions, {emb} embeds them)"

    @property
    def resolved_mode(self) -> str:
        """The mode the scores will be in: ``"auto"`` resolved as ``AnswerRelevancy`` does."""
        if self.mode != "auto":
            return self.mode
        return "focus" if self.llm == "local" and self.embeddings == "local" else "ragas"

    @property
    def needs_key(self) -> bool:
        return self.backend == "openai"


def _secret(name: str) -> str | None:
    try:
        value = st.secrets.get(name)
    except Exception:  # no secrets.toml: st.secrets raises on access
        return None
    return str(value) if value else None


#: where a typed key is kept for the session (not a widget key: never sent back to the page)
_KEY_SLOT = "_sb_api_secret"


def _take_typed_key() -> None:
    """Move a typed key out of the password field into the session (the field stays empty)."""
    typed = (st.session_state.get("sb_api_key_input") or "").strip()
    if typed:
        register_secret(typed)
        st.session_state[_KEY_SLOT] = typed
    st.session_state["sb_api_key_input"] = ""


def _forget_key() -> None:
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


def _render_settings() -> Settings:
    backend = st.radio(
        "Backend",
        list(BACKENDS),
        format_func=BACKENDS.get,
        help="The embedded models run on this machine with no key and no network.",
        **bind("sb_backend", "embedded", options=list(BACKENDS)),
    )
    base_url = None
    if backend == "embedded":
        st.caption(f"Generator: **{EMBEDDED_LLM}**  \nEmbeddings: **{EMBEDDED_EMB}**")
        llm, embeddings = "local", "local"
    else:
        if backend == "compatible":
            base_url = (
                st.text_input(
                    "Base URL",
                    placeholder="http://127.0.0.1:8080/v1",
                    help="Any server speaking the OpenAI API: llama.cpp, vLLM, Ollama, LiteLLM...",
                    **bind("sb_base_url", "http://127.0.0.1:8080/v1"),
                ).strip()
                or None
            )
        llm_model = (
            st.text_input("Generator model", **bind("sb_llm_model", "gpt-4o-mini")).strip()
            or "gpt-4o-mini"
        )
        emb_model = (
            st.text_input(
                "Embedding model", **bind("sb_emb_model", "text-embedding-3-small")
            ).strip()
            or "text-embedding-3-small"
        )
        llm, embeddings = f"openai:{llm_model}", f"openai:{emb_model}"
        st.text_input(
            "API key",
            type="password",
            key="sb_api_key_input",
            on_change=_take_typed_key,
            help="Kept in memory for this browser session only: never shown again, never "
            "saved with a run. Or set OPENAI_API_KEY in the environment or in "
            ".streamlit/secrets.toml.",
            placeholder="sk-… (optional when set in env/secrets)",
        )
    key, source = get_api_key()
    if backend != "embedded":
        if source == "environment":
            st.caption("🔑 Key: from the `OPENAI_API_KEY` environment variable.")
        elif source == "secrets":
            st.caption("🔑 Key: from `st.secrets`.")
        elif source == "field":
            st.caption("🔑 Key: entered in this session (hidden).")
            st.button("Forget the key", key="sb_forget_key", on_click=_forget_key)
        elif backend == "openai":
            st.warning("OpenAI needs an API key.", icon="🔑")
        else:
            st.caption("No key: fine for local servers.")
    strictness = st.slider(
        "Strictness (questions per answer)",
        1,
        10,
        help="N in the formula; Ragas uses 3.",
        **bind("sb_strictness", 3),
    )
    concurrency = st.slider(
        "Concurrency (rows at once)",
        1,
        16,
        help="The embedded generator runs one row at a time; more helps API backends.",
        **bind("sb_concurrency", 4),
    )
    noncommittal = st.selectbox(
        "Noncommittal detector",
        list(NONCOMMITTAL),
        format_func=NONCOMMITTAL.get,
        **bind("sb_noncommittal", "auto", options=list(NONCOMMITTAL)),
    )
    return Settings(
        backend=backend,
        llm=llm,
        embeddings=embeddings,
        base_url=base_url,
        strictness=int(strictness),
        noncommittal=noncommittal,
        concurrency=int(concurrency),
        key_source=source,
    )


def render_sidebar() -> Settings:
    """Draw the shared sidebar and return the chosen settings."""
    with st.sidebar:
        st.markdown(
            f'<div class="rel-brand">📐 Answer Relevancy<span>v{__version__}</span></div>',
            unsafe_allow_html=True,
        )
        nav_links()
        st.divider()
        runs = list_runs()
        current = active_run(runs)
        if runs:
            labels = {r.id: r.label for r in runs}
            ids = list(labels)
            choice = st.selectbox(
                "Active run",
                ids,
                format_func=lambda i: labels.get(i, str(i)),
                help="The saved run that the Dataset, Distributions, Embeddings and Compare "
                "pages show.",
                **bind("active_run", current.id if current else ids[0], options=ids),
            )
            set_active_run(choice)
        threshold = st.slider(
            "Low-score threshold",
            0.0,
            1.0,
            step=0.05,
            help="Scores below this are flagged as low on every page.",
            **bind("sb_threshold", 0.5),
        )
        mode = st.segmented_control(
            "Scoring mode",
            MODES,
            help=MODE_HELP,
            required=True,
            **bind("sb_mode", "auto", options=MODES),
        )
        mode_note = st.empty()
        with st.expander("⚙️ Scoring settings", expanded=False):
            settings = _render_settings()
        settings = Settings(**{**asdict(settings), "mode": mode or "auto"})
        mode_note.caption(_mode_note(settings))
        with st.expander("💾 Storage", expanded=False):
            from relevancy._cache import default_cache_dir
            from relevancy.store import default_store_path

            st.text_input(
                "Run store (SQLite file or folder)",
                help="Where scored runs are saved. Default: $RELEVANCY_STORE or your user "
                "data folder.",
                **bind("sb_store", str(default_store_path())),
            )
            st.caption(f"Model cache: `{default_cache_dir()}`")
    return Settings(**{**asdict(settings), "threshold": float(threshold)})


def _mode_note(settings: Settings) -> str:
    resolved = settings.resolved_mode
    what = {
        "ragas": "scores are the Ragas Answer Relevancy, exactly",
        "focus": "scores are sentence-level; each row keeps its Ragas value too",
    }[resolved]
    if settings.mode == "auto":
        models = "embedded models" if resolved == "focus" else "API models"
        return f"New scores: **{resolved}** (auto, {models}): {what}."
    return f"New scores: **{resolved}**: {what}."


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
) -> Any:
    from relevancy import AnswerRelevancy, Cache, make_embedder, make_generator

    options: dict[str, Any] = {} if llm == "local" else {"timeout": 60.0}
    generator = make_generator(llm, base_url=base_url, api_key=_api_key, **options)
    embedder = make_embedder(embeddings, base_url=base_url, api_key=_api_key, **options)
    return AnswerRelevancy(
        llm=generator,
        embeddings=embedder,
        strictness=strictness,
        noncommittal=noncommittal,
        concurrency=concurrency,
        mode=mode,
        cache=Cache(cache_dir),
    )


def get_metric(settings: Settings) -> Any:
    """The metric for these settings (built once per configuration and key)."""
    from relevancy._cache import default_cache_dir

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
    )


@st.cache_resource(show_spinner="Loading the embedding model…")
def _local_embedder() -> Any:
    from relevancy import make_embedder

    return make_embedder("local")


def get_embedder_for(embeddings_name: str, settings: Settings) -> Any | None:
    """The embedder that produced ``embeddings_name`` (for sentence shading), if available.

    The embedded MiniLM is always available; an API embedder only when the sidebar is set to
    the same model (and a key, where needed).
    """
    if embeddings_name.startswith("local:all-MiniLM"):
        return _local_embedder()
    if settings.backend == "embedded":
        return None
    try:
        metric = get_metric(settings)
    except Exception:
        return None
    return metric.embeddings if metric.embeddings.name == embeddings_name else None
