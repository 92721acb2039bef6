"""A self-contained HTML report of a run: summary statistics, charts, lowest rows.

The file works offline: plotly's JavaScript is inlined once, nothing is fetched from elsewhere,
and every piece of user text (run name, questions, answers, generated questions) is
HTML-escaped. Each row it lists has an anchor (``#row-37``, 1-based as in the dashboard) and,
when the report is given the dashboard's address, a link that opens the row's drill-down there
(the report's only links out).
"""

from __future__ import annotations

import html
import math
from datetime import datetime, timezone
from typing import Any

from relevancy.analysis.compare import pair_variants, summarize_pairs
from relevancy.analysis.summary import frame_modes, mode_label, summary_table
from relevancy.core.modes import MODE_DESCRIPTIONS
from relevancy.core.numbers import NO_NUMBER, percent
from relevancy.core.result import RelevancyResult
from relevancy.core.triage import (
    SENTENCE_LOW,
    sentence_marks,
    sentences_from_parts,
    triage,
    verdict_text,
)
from relevancy.report import charts, compare_charts
from relevancy.report.links import app_base, row_anchor, row_url
from relevancy.runs import RowQuery, RunStore

__all__ = ["build_report"]

#: what a result's ``value`` is, in a few plain words per scoring mode (as the pages say it)
MODE_SHORT = {mode: MODE_DESCRIPTIONS[mode] for mode in ("ragas", "focus", "blend")}

_CSS = """
body { font-family: Inter, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2937;
       margin: 0; background: #f4f6fb; }
main { max-width: 1100px; margin: 0 auto; padding: 32px 24px 64px; }
header { background: linear-gradient(120deg, #4f46e5, #0ea5e9); color: white;
         padding: 28px 24px; }
header h1 { margin: 0 0 6px; font-size: 26px; }
header p { margin: 0; opacity: .9; }
section { background: white; border-radius: 12px; padding: 20px 24px; margin: 20px 0;
          box-shadow: 0 1px 3px rgba(15, 23, 42, .08); }
h2 { font-size: 18px; margin: 0 0 12px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e5e7eb;
         vertical-align: top; }
th { background: #f8fafc; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { flex: 1 1 150px; background: #f8fafc; border-radius: 10px; padding: 12px 16px; }
.card .v { font-size: 24px; font-weight: 700; }
.card .l { font-size: 12px; color: #6b7280; text-transform: uppercase; letter-spacing: .04em; }
.muted { color: #6b7280; font-size: 13px; }
.score { font-weight: 700; padding: 2px 8px; border-radius: 999px; color: white; }
ul.q { margin: 0; padding-left: 18px; }
li.low { color: #991b1b; }
li.low::marker { content: "✗ "; }
a.row { color: #4338ca; font-weight: 600; text-decoration: none; }
a.open { font-size: 12px; color: #4338ca; white-space: nowrap; }
tr:target td { background: #eef2ff; }
"""


def _f(x: Any, digits: int = 3) -> str:
    if x is None:  # a failed score or similarity: the same dash as NaN, never "None"
        return NO_NUMBER
    try:
        v = float(x)
    except (TypeError, ValueError):
        return html.escape(str(x))
    return NO_NUMBER if math.isnan(v) else f"{v:.{digits}f}"


def _pct(x: float) -> str:
    return percent(x, 1)


def _sentences_html(result: RelevancyResult) -> str:
    """A row's sentences with their similarity to the question; those the sentence table
    marks off topic are marked (a citation or a list of sources never is)."""
    items = []
    found = sentences_from_parts([p for p in result.parts if isinstance(p, dict) and "text" in p])
    marks = sentence_marks(result)
    for sentence, mark in zip(found, marks):
        low = " class='low'" if mark == "off topic" else ""
        items.append(
            f"<li{low}>{html.escape(sentence.text)} "
            f"<span class='muted'>({_f(sentence.similarity, 2)})</span></li>"
        )
    return f"<ul class='q'>{''.join(items)}</ul>" if items else ""


def _figure_html(fig: Any, first: bool) -> str:
    return fig.to_html(
        full_html=False,
        include_plotlyjs=bool(first),
        config={"displaylogo": False, "responsive": True},
    )


def _row_cell(run_id: int, row: int, dashboard: str | None) -> str:
    """A row's number, linking to its own anchor, and a link to its drill-down in the dashboard
    when the dashboard's address is known."""
    anchor = row_anchor(row)
    cell = f"<a class='row' href='#{anchor}' title='Link to this row'>{row + 1}</a>"
    if dashboard:
        href = html.escape(row_url(run_id, row, dashboard), quote=True)
        cell += (
            f"<br><a class='open' href='{href}' title='Open this row in the dashboard'>open ↗</a>"
        )
    return f"<td class='num'>{cell}</td>"


def build_report(
    store: RunStore,
    run_id: int,
    *,
    threshold: float = 0.5,
    lowest: int = 10,
    dashboard_url: str | None = None,
) -> str:
    """HTML text of the report of a stored run (read a column at a time: any size).

    ``dashboard_url``: the dashboard's address (``http(s)://host[:port][/path]``); each row
    listed then links to its drill-down there. Without it (or with anything but an http(s)
    address) rows link only to their anchors in the report.
    """
    dashboard = app_base(dashboard_url, ())
    info = store.get_run(run_id)
    roles = [c for c in ("id", "variant") if c in info.columns]
    frame = store.columns(run_id, ["user_input", *roles, "score", "mode", "ragas_value"])
    by = "variant" if "variant" in frame.columns and frame["variant"].nunique() > 1 else None
    stats = summary_table(frame, threshold=threshold, by=by)
    overall = stats.iloc[0] if len(stats) else None
    settings = info.settings
    e = html.escape
    modes = frame_modes(frame)
    mode = mode_label(modes)
    with_ragas = "ragas_mean" in stats.columns

    parts: list[str] = []
    parts.append(
        "<header><main style='padding:0'>"
        f"<h1>Answer Relevancy report · {e(info.name)}</h1>"
        f"<p>Run #{info.id} · created {e(info.created)} · {info.n_scored} of {info.n_rows} rows "
        f"scored · generator {e(str(settings.get('llm_name') or settings.get('llm', '?')))} · "
        f"embeddings {e(str(settings.get('embeddings_name') or settings.get('embeddings', '?')))}"
        f" · strictness {e(str(settings.get('strictness', '?')))}"
        + (f" · {e(mode)} mode" if mode else "")
        + "</p>"
        "</main></header><main>"
    )
    if overall is not None:
        parts.append(
            "<section><h2>Summary</h2><div class='cards'>"
            f"<div class='card'><div class='l'>mean score</div><div class='v'>{_f(overall['mean'])}"
            f"</div><div class='muted'>95% CI [{_f(overall['ci_low'])}, {_f(overall['ci_high'])}]"
            "</div></div>"
            + (
                f"<div class='card'><div class='l'>mean Ragas value</div>"
                f"<div class='v'>{_f(overall['ragas_mean'])}</div><div class='muted'>same rows, "
                "same generated questions</div></div>"
                if with_ragas
                else ""
            )
            + f"<div class='card'><div class='l'>median</div>"
            f"<div class='v'>{_f(overall['median'])}</div></div>"
            f"<div class='card'><div class='l'>below {threshold:.2f}</div>"
            f"<div class='v'>{_pct(overall['below'])}</div></div>"
            f"<div class='card'><div class='l'>rows · NaN</div><div class='v'>{overall['rows']}"
            f" · {overall['NaN']}</div></div></div>"
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in (
                "group",
                "mode",
                "rows",
                "NaN",
                "mean",
                *(["mean Ragas value"] if with_ragas else []),
                "95% CI",
                "median",
                f"below {threshold:.2f}",
            )
        )
        body = "".join(
            f"<tr><td>{e(str(r['group']))}</td><td>{e(str(r['mode']))}</td>"
            f"<td class='num'>{r['rows']}</td>"
            f"<td class='num'>{r['NaN']}</td><td class='num'>{_f(r['mean'])}</td>"
            + (f"<td class='num'>{_f(r['ragas_mean'])}</td>" if with_ragas else "")
            + f"<td class='num'>[{_f(r['ci_low'])}, {_f(r['ci_high'])}]</td>"
            f"<td class='num'>{_f(r['median'])}</td><td class='num'>{_pct(r['below'])}</td></tr>"
            for _, r in stats.iterrows()
        )
        if mode in MODE_SHORT:
            meaning = (
                f"Scores are in <b>{mode}</b> mode: {e(MODE_SHORT[mode])}; 0 for noncommittal "
                "answers."
            )
        else:
            meaning = (
                "Rows of this run were scored in different modes ("
                + ", ".join(e(m) for m in modes)
                + "), so their scores mean different things: compare their Ragas values."
            )
        if with_ragas:
            meaning += (
                " Every row also keeps its Ragas value (mean cosine similarity between the "
                "user's question and questions an LLM rebuilt from the answer)."
            )
        by_reason = " · ".join(
            f"{n:,} {e(reason or 'not triaged')}" for reason, n in store.counts(run_id).items()
        )
        parts.append(
            f"<p class='muted'>{meaning} Scores near 1 mean the answer addresses the question; "
            f"below {threshold:.2f} is counted as low.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            f"<p>Rows by main reason: {by_reason}.</p></section>"
        )

    figures = []
    if len(frame):
        figures.append(("Distribution", charts.score_histogram(frame, threshold=threshold, by=by)))
        figures.append(("Spread", charts.score_box(frame, threshold=threshold, by=by)))
        figures.append(
            ("Cumulative share (ECDF)", charts.score_ecdf(frame, threshold=threshold, by=by))
        )
    if by:
        names = sorted(frame["variant"].astype(str).unique())[:2]
        paired = pair_variants(frame, names[0], names[1])
        if len(paired):
            summary = summarize_pairs(paired)
            figures.append(
                (
                    f"{e(names[1])} vs {e(names[0])}: {summary['wins']} better, "
                    f"{summary['ties']} ties, {summary['losses']} worse; mean difference "
                    f"{_f(summary['mean_diff'])} [{_f(summary['ci_low'])}, "
                    f"{_f(summary['ci_high'])}]",
                    compare_charts.ab_scatter(paired, label_a=names[0], label_b=names[1]),
                )
            )
    for i, (title, fig) in enumerate(figures):
        parts.append(f"<section><h2>{title}</h2>{_figure_html(fig, i == 0)}</section>")

    if len(frame):
        low = store.columns(run_id, roles, query=RowQuery(), limit=lowest)  # NaN, then lowest
        rows = [int(x) for x in low["row"]]
        results = dict(zip(sorted(rows), store.results(run_id, rows)))  # given in row order
        variants = dict(zip(rows, low["variant"])) if by else {}
        with_sentences = any(r.parts for r in results.values())
        rows_html = []
        for row in rows:
            r = results[row]
            qs = "".join(
                f"<li>{e(q.question)} <span class='muted'>({_f(q.similarity, 2)})</span></li>"
                for q in r.questions
            )
            color = charts.score_color(r.value)
            variant = f"<br><span class='muted'>{e(str(variants[row]))}</span>" if by else ""
            row_mode = f"<br><span class='muted'>{e(r.mode)}</span>" if mode else ""
            ragas = f"<td class='num'>{_f(r.ragas_value)}</td>" if with_ragas else ""
            sentences = f"<td>{_sentences_html(r)}</td>" if with_sentences else ""
            word = verdict_text(
                r.value if r.ok else math.nan,
                threshold,
                r.questions_used,
                r.strictness,
                settings.get("min_questions"),
            )
            error = f"<span class=muted>{e(r.error)}</span>" if r.error else ""
            reason = r.reason or triage(r).reason
            rows_html.append(
                f"<tr id='{row_anchor(row)}'>{_row_cell(run_id, row, dashboard)}"
                f"<td class='num'><span class='score' style='background:{color}'>"
                f"{_f(r.value)}</span><br><span class='verdict'>{e(word)}</span>"
                f"{row_mode}{variant}</td>{ragas}"
                f"<td><b>{e(reason)}</b><br><span class='muted'>{e(', '.join(r.flags))}</span></td>"
                f"<td>{e(r.user_input)}</td><td>{e(r.response)}</td>{sentences}"
                f"<td><ul class='q'>{qs}</ul>{error}</td></tr>"
            )
        head = (
            "<th>row</th><th>score</th>"
            + ("<th>Ragas value</th>" if with_ragas else "")
            + "<th>reason</th>"
            + "<th>question</th><th>answer</th>"
            + ("<th>sentences (similarity to the question)</th>" if with_sentences else "")
            + "<th>generated questions (similarity)</th>"
        )
        note = (
            "<p class='muted'>Sentences in red are off topic: far from the question (similarity "
            f"below {SENTENCE_LOW}) and from each part of it; citations and lists of sources are "
            "never marked.</p>"
            if with_sentences
            else ""
        )
        parts.append(
            f"<section><h2>Lowest {len(rows_html)} rows</h2>{note}<table><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(rows_html)}</tbody></table></section>"
        )
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(f"<p class='muted'>Generated by relevancy on {stamp}.</p></main>")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>Answer Relevancy · {e(info.name)}</title><style>{_CSS}</style></head><body>"
        + "".join(parts)
        + "</body></html>"
    )
