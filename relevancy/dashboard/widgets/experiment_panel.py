"""The Experiments page's Streamlit parts: the question set, the templates side by side, the
models, the run with its progress, and the results (matrix, summary, answers, Compare).

Keys are prefixed ``exp_``. Templates, answers and questions are data: drawn with ``st.text``,
in tables, or escaped with :func:`~relevancy.dashboard.views.format.esc`, never as Markdown.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st

from relevancy.dashboard.views.datasets import UPLOAD_TYPES, read_upload
from relevancy.dashboard.views.experiments import (
    EMBEDDED_NOTE,
    STARTERS,
    PageTemplate,
    cell_matrix,
    parse_models,
    question_label,
    question_numbers,
    summary_table,
)
from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.drilldown import render_result
from relevancy.dashboard.widgets.models import Settings, get_api_key, get_metric
from relevancy.dashboard.widgets.state import (
    clear_run_caches,
    get_store,
    list_runs,
    load_run,
    reasons_at,
    set_active_run,
)
from relevancy.errors import InputError
from relevancy.experiments import (
    DEMO,
    AnswerSettings,
    Extension,
    Plan,
    check_plan,
    estimate,
    experiment_runs,
    extend_experiment,
    load_questions,
    make_answerer,
    plan_extension,
    run_experiment,
)
from relevancy.experiments.extend import check_endpoint, run_judge
from relevancy.experiments.questions import notes as question_notes
from relevancy.experiments.questions import question_set
from relevancy.experiments.summary import variant_summary
from relevancy.paths import default_cache_dir

__all__ = [
    "mode",
    "questions",
    "templates",
    "models",
    "plan_and_estimate",
    "run",
    "extend",
    "results",
    "RUN_KEY",
    "NEW",
    "EXTEND",
]

#: the run the page shows (the last experiment run here)
RUN_KEY = "exp_run"
MAX_TEMPLATES = 4
NEW, EXTEND = "new", "extend"
_UPLOAD = "upload"
#: what the page says when no model is named
NO_MODEL = "pick a model (type local for the embedded one)"


def mode() -> str:
    """A new experiment, or a saved one extended with another template or model."""
    return str(
        st.radio(
            "Experiment",
            [NEW, EXTEND],
            format_func=lambda m: (
                "A new experiment" if m == NEW else "Extend a saved run (another template or model)"
            ),
            horizontal=True,
            key="exp_mode",
        )
    )


def questions() -> tuple[pd.DataFrame, str] | None:
    """The question set: the demo's, an uploaded file's or a saved run's (None while a file is
    to be uploaded); :class:`InputError` in one line for a file that holds none."""
    runs = [r for r in list_runs() if r.n_rows]
    picked = st.selectbox(
        "Questions",
        [DEMO, _UPLOAD, *(f"run:{r.id}" for r in runs)],
        format_func=lambda s: (
            "the bundled demo's 24 questions"
            if s == DEMO
            else "a file (CSV, JSONL or Parquet)"
            if s == _UPLOAD
            else next(f"questions of run #{r.id} {r.name}" for r in runs if f"run:{r.id}" == s)
        ),
        key="exp_questions",
    )
    if picked != _UPLOAD:
        return _noted(load_questions(picked, store=get_store()))
    upload = st.file_uploader(
        "Questions file: a question column (user_input, question, query or input) and any "
        "others, which templates may name as {column}",
        type=list(UPLOAD_TYPES),
        key="exp_upload",
    )
    if upload is None:
        return None
    return _noted(
        (question_set(read_upload(upload.name, upload.getvalue()), upload.name), upload.name)
    )


def _noted(loaded: tuple[pd.DataFrame, str]) -> tuple[pd.DataFrame, str]:
    """The question set, each of its notes said (a blank question left out, a question taken
    once, an id given to two questions)."""
    for note in question_notes(loaded[0]):
        st.info(esc(note), icon="ℹ️")
    return loaded


def templates(
    *, least: int = 1, start: int = 2, taken: tuple[str, ...] = (), prefix: str = "exp"
) -> list[PageTemplate]:
    """Templates side by side (``start`` of them at first; names in ``taken`` not offered)."""
    count = st.number_input("Templates", least, MAX_TEMPLATES, start, key=f"{prefix}_count")
    starters = [t for t in STARTERS if t[0] not in taken]
    out = []
    for i, column in enumerate(st.columns(max(int(count), 1))[: int(count)]):
        name, system, user = starters[i] if i < len(starters) else (f"t{i + 1}", "", "{user_input}")
        with column:
            out.append(
                PageTemplate(
                    st.text_input("Name", name, key=f"{prefix}_name_{i}"),
                    st.text_area("System", system, key=f"{prefix}_system_{i}", height=80),
                    st.text_area("User", user, key=f"{prefix}_user_{i}", height=80),
                )
            )
    return out


def endpoint(
    base_url: str | None, *, default: str = "local", prefix: str = "exp"
) -> tuple[list[str], str | None]:
    """The answer models typed, and their endpoint."""
    left, right = st.columns(2)
    names = parse_models(
        left.text_input(
            "Models (comma-separated; local = the embedded one)", default, key=f"{prefix}_models"
        )
    )
    url = right.text_input(
        "OpenAI-compatible endpoint (for models other than local)",
        base_url or "",
        key=f"{prefix}_base_url",
        help="The key comes from the sidebar or OPENAI_API_KEY; it is never saved.",
    )
    if "local" in names:
        st.caption(EMBEDDED_NOTE)
    return names, url.strip() or None


def models(base_url: str | None) -> tuple[list[str], str | None, AnswerSettings]:
    """The answer models, their endpoint and their settings."""
    names, url = endpoint(base_url)
    a, b, c = st.columns(3)
    settings = AnswerSettings(
        temperature=float(a.number_input("Temperature", 0.0, 2.0, 0.0, 0.1, key="exp_temp")),
        max_tokens=int(b.number_input("Max tokens", 1, 4096, 120, key="exp_max_tokens")),
        repeats=int(c.number_input("Repeats", 1, 20, 1, key="exp_repeats")),
    )
    return names, url, settings


def _one_line(exc: Exception) -> None:
    """A RelevancyError says what to fix; anything else is said too, in one line."""
    st.error(esc(str(exc).splitlines()[0] if str(exc) else type(exc).__name__))


def _answerers(plan: Plan, base_url: str | None) -> dict[str, Any]:
    key, _ = get_api_key()
    needed = dict.fromkeys(m for _, m, _, _ in plan.cells())
    return {m: make_answerer(m, plan.settings, base_url=base_url, api_key=key) for m in needed}


def _show_estimate(plan: Plan, answerers: dict[str, Any], metric: Any, rows: int) -> None:
    found = estimate(plan, answerers, metric.cache)
    a, b, c = st.columns(3)
    a.metric("Answers", f"{found.answers:,}", border=True)
    b.metric("To request", f"{found.requests:,}", help="Not in the answer cache", border=True)
    c.metric("Answer tokens at most", f"{found.completion_tokens:,}", border=True)
    cost = "unknown (no list price)" if found.dollars is None else f"${found.dollars:.4f}"
    st.caption(
        f"About {found.prompt_tokens:,} prompt tokens; cost {cost}; then {rows:,} "
        "rows scored by the sidebar's judge."
    )


def plan_and_estimate(
    typed: list[PageTemplate],
    names: list[str],
    frame: pd.DataFrame,
    settings: AnswerSettings,
    base_url: str | None,
    metric: Any,
) -> tuple[Plan, dict[str, Any]] | None:
    """The plan, checked (one line when it cannot run), and its estimate before running."""
    try:
        plan = Plan([t.template() for t in typed], names, frame, settings)
        for warning in check_plan(plan, no_model=NO_MODEL):
            st.warning(esc(warning), icon="⚠️")
        answerers = _answerers(plan, base_url)
    except Exception as exc:  # said in one line
        _one_line(exc)
        return None
    _show_estimate(plan, answerers, metric, plan.size)
    return plan, answerers


def _with_progress(size: int, go: Any) -> Any:
    """``go(on_answer, on_score)`` with a progress bar for each."""
    bars = {what: st.progress(0.0, text=f"{what}: starting") for what in ("Answering", "Scoring")}
    done = {"Answering": 0, "Scoring": 0}

    def tick(what: str) -> Any:
        def step(n: int) -> None:
            done[what] += n
            bars[what].progress(
                min(1.0, done[what] / max(size, 1)), text=f"{what}: {done[what]:,} of {size:,}"
            )

        return step

    return go(tick("Answering"), tick("Scoring"))


def _out(name: str) -> Any:
    return default_cache_dir() / "experiments" / f"{name or 'experiment'}.csv".replace("/", "_")


def _said(finished: Any) -> None:
    clear_run_caches()
    st.session_state[RUN_KEY] = finished.run_id
    if finished.failed_answers:
        first = finished.answers[finished.answers["answer_error"].notna()].iloc[0]
        st.error(
            esc(
                f"{finished.failed_answers} answers failed and are kept with their error "
                f"({first['variant']}: {first['answer_error']})"
            )
        )


def run(plan: Plan, metric: Any, answerers: dict[str, Any], name: str, judge: Settings) -> None:
    """Answer and score, with a progress bar for each; the saved run becomes the page's (it
    keeps the sidebar's judge, ``judge``, so an extension scores as it was scored)."""
    finished = _with_progress(
        plan.size,
        lambda on_answer, on_score: run_experiment(
            plan,
            metric,
            answerers,
            _out(name),
            store=get_store(),
            run_name=name,
            source="the page's question set",
            judge={
                "llm": judge.llm,
                "embeddings": judge.embeddings,
                "base_url": judge.base_url,
                "mode": judge.mode,
                "noncommittal": judge.noncommittal,
                "prompt_language": judge.prompt_language,
            },
            on_answer=on_answer,
            on_score=on_score,
        ),
    )
    _said(finished)


#: what the page's judge is always built with (the sidebar sets the rest)
_PAGE_JUDGE = {"seed": 0, "max_response_chars": None}


def run_metric(info: Any, settings: Settings) -> tuple[Any, dict[str, Any]]:
    """The metric a saved experiment run was scored with (the sidebar's key, its own models and
    options), and that judge; :class:`InputError` in one line when the page cannot build it."""
    judge = run_judge(info.settings)
    for key, value in _PAGE_JUDGE.items():
        if key in judge and judge[key] != value:
            raise InputError(
                f"run #{info.id} was scored with {key} {judge[key]}, which this page does not "
                f"set: extend it with relevancy experiment --extend-run {info.id}"
            )
    fields = ("llm", "embeddings", "strictness", "noncommittal", "mode", "prompt_language")
    chosen = replace(
        settings,
        base_url=judge.get("base_url") or settings.base_url,
        **{k: judge[k] for k in fields if k in judge},
    )
    metric = get_metric(chosen)
    for key in ("threshold", "min_questions"):
        if key in judge and float(judge[key]) != float(getattr(metric, key)):
            raise InputError(
                f"run #{info.id} was scored with {key} {judge[key]}, which this page does not "
                f"set: extend it with relevancy experiment --extend-run {info.id}"
            )
    return metric, judge


def extend(settings: Settings) -> None:
    """A saved experiment run re-opened: its variants listed, templates and models added; only
    the new variants answered at the run's endpoint and scored with the run's judge, into that
    run (and its failed answers asked again, in place)."""
    store = get_store()
    runs = experiment_runs(store)
    if not runs:
        st.info("No saved experiment run yet: run a new experiment first.")
        return
    run_id = st.selectbox(
        "Run to extend",
        [r.id for r in runs],
        format_func=lambda i: next(r.label for r in runs if r.id == i),  # plain text
        key="exp_extend_run",
    )
    info = next(r for r in runs if r.id == run_id)
    made = info.settings["experiment"]
    have = tuple(t["name"] for t in made.get("templates", []))
    st.caption(
        "Its templates and models (answered at the run's endpoint, with its temperature, "
        "tokens and seed, and scored with its judge)"
    )
    typed = templates(least=0, start=1, taken=have, prefix="exp_x")
    names, url = endpoint(made.get("base_url") or settings.base_url, default="", prefix="exp_x")
    try:
        metric, judge = run_metric(info, settings)
        st.text(
            f"templates: {', '.join(have)}\nmodels: {', '.join(made.get('models', []))}\n"
            f"judge: {judge.get('llm', '?')} writes the questions, {judge.get('embeddings', '?')}"
            f" embeds them (strictness {judge.get('strictness', '?')})"
        )
        extension = plan_extension(
            store, run_id, [t.template() for t in typed], names, more="another template or model"
        )
        url = check_endpoint(extension, url, fix="put the run's endpoint back in the field")
        for warning in check_plan(extension.plan, no_model=NO_MODEL):
            st.warning(esc(warning), icon="⚠️")
        answerers = _answerers(extension.plan, url)
    except Exception as exc:  # said in one line
        _one_line(exc)
        return
    st.text(
        "new variants: "
        + (", ".join(extension.new_variants) or "none")
        + (f"; {extension.retried:,} failed answers asked again" if extension.retried else "")
    )
    rows = extension.plan.size + len(extension.pending)
    _show_estimate(extension.plan, answerers, metric, rows)
    if st.button("Extend the run", key="exp_extend_go", type="primary"):
        go = _extend(extension, metric, answerers, store)
        _said(_with_progress(rows, go))


def _extend(extension: Extension, metric: Any, answerers: dict[str, Any], store: Any) -> Any:
    def go(on_answer: Any, on_score: Any) -> Any:
        return extend_experiment(
            extension,
            metric,
            answerers,
            _out(f"{extension.name}-extended"),
            store,
            on_answer=on_answer,
            on_score=on_score,
        )

    return go


def results(run_id: int, threshold: float) -> None:
    """The matrix, the summary per variant, one question's answers and the Compare link."""
    data = load_run(run_id)
    frame = reasons_at(run_id, data.frame, threshold)  # each reason at the sidebar's threshold
    if frame.empty or "variant" not in frame:
        st.info("This run has no scored experiment rows yet.")
        return
    st.subheader(f"Run #{run_id}: {esc(data.info.name)}", anchor=False)
    st.markdown("**Per variant** (mean with its 95% CI, share below the threshold)")
    st.dataframe(
        summary_table(variant_summary(frame, threshold=threshold)),
        hide_index=True,
        key="exp_summary",
    )
    st.markdown("**Question × variant** (score and main reason)")
    st.dataframe(cell_matrix(frame), key="exp_matrix")
    number = question_numbers(frame)
    first = ~number.duplicated()
    firsts = frame[first].set_index(number[first])
    question = st.selectbox(  # options are plain text: no Markdown escaping
        "Answers to",
        list(firsts.index),
        format_func=lambda q: question_label(q, firsts.loc[q]),
        key="exp_question",
    )
    rows = frame[number == question]
    variant = st.radio(  # a radio's options are Markdown: escaped
        "Variant", list(dict.fromkeys(rows["variant"])), format_func=esc, key="exp_variant"
    )
    row = rows[rows["variant"] == variant].iloc[0]
    st.caption("Prompt sent")
    st.text(str(row.get("prompt", "")))
    st.caption(
        "Answer" + (f" — {row['answer_error']}" if pd.notna(row.get("answer_error")) else "")
    )
    st.text(str(row.get("response", "") if pd.notna(row.get("response")) else ""))
    index = rows.index[rows["variant"] == variant][0]
    render_result(data.results[index], key=f"exp_drill_{run_id}", threshold=threshold, compact=True)
    compare(run_id, list(dict.fromkeys(frame["variant"])))


def compare(run_id: int, variants: list[str]) -> None:
    """Open Compare on two variants of the run (paired by question)."""
    if len(variants) < 2:
        return
    a, b, c = st.columns([2, 2, 1], vertical_alignment="bottom")
    first = a.selectbox("Compare A", variants, index=0, key="exp_cmp_a")
    second = b.selectbox("with B", variants, index=1, key="exp_cmp_b")
    if c.button("Open in Compare", key="exp_open_compare", icon="⚖️"):
        set_active_run(run_id)
        st.session_state.update(cmp_column="variant", cmp_a=first, cmp_b=second)
        st.switch_page("pages/4_Compare.py")
