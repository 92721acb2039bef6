"""The Agreement page's logic, without Streamlit: figures, tables and the score-vs-label chart.

:func:`load` reads a run's scores and human labels from the store (a column each) and
:func:`compute` gives every figure the page shows: :func:`relevancy.analysis.agreement.agreement`
for all labelled rows and for each group (variant), and the rows where score and label disagree
most. The bootstrap resamples questions (``user_input``): the same figures, intervals included, as
``python -m bench.agreement report`` on the same rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from relevancy.analysis.agreement import (
    Agreement,
    Interval,
    agreement,
    disagreements,
    positive_labels,
)
from relevancy.runs import SORTS, RowQuery, RunStore

__all__ = [
    "FEW_LABELS",
    "WIDE_CI",
    "AgreementView",
    "compute",
    "load",
    "resampling_note",
    "WHOLE_READ",
    "few_labels",
    "figures_table",
    "chart_note",
    "CHART_POINTS",
]

#: fewer labelled rows than this give intervals too wide to read much into
FEW_LABELS = 20
#: ... and so does an interval of the headline figure this wide, whatever the rows
WIDE_CI = 0.4

#: dots drawn in the score-by-label chart; above, a stated sample (its boxes are of every row,
#: from their quartiles: 5,000 dots and 10,000 scores were 533 KB and a second of the browser)
CHART_POINTS = 1_000


@dataclass
class AgreementView:
    """Everything the Agreement page shows for one run."""

    overall: Agreement
    by_group: dict[str, Agreement] = field(default_factory=dict)
    group: str | None = None  #: the column the groups come from (``variant``)
    #: the labelled, scored rows: ``row``, ``score``, ``label``, ``good``, ``user_input``...
    frame: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: where score and label disagree: ``row``, ``score``, ``label``, ``kind``, ``gap``...
    disagreements: pd.DataFrame = field(default_factory=pd.DataFrame)
    unlabelled: int = 0  #: scored rows without a label

    @property
    def threshold(self) -> float:
        return self.overall.threshold.value


def compute(
    frame: pd.DataFrame,
    *,
    by: str | None = None,
    cut: float | None = None,
    n_boot: int | None = None,
    limit: int = 50,
) -> AgreementView:
    """The figures of ``frame`` (columns ``row``, ``score``, ``label``, ``user_input`` and
    ``by`` when given): overall, per value of ``by``, and the disagreements (at most ``limit``
    of each kind, furthest from the overall best threshold first)."""
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float)
    labels = pd.to_numeric(frame["label"], errors="coerce").to_numpy(dtype=float)
    groups = frame["user_input"].astype(str).tolist()
    overall = agreement(scores, labels, groups=groups, cut=cut, n_boot=n_boot)
    cut = overall.cut
    by_group: dict[str, Agreement] = {}
    if by and by in frame.columns:
        keys = frame[by].fillna("").astype(str)
        if keys.nunique() > 1:
            for key in sorted(keys.unique()):
                m = (keys == key).to_numpy()
                by_group[key or "(none)"] = agreement(
                    scores[m],
                    labels[m],
                    groups=[g for g, k in zip(groups, m) if k],
                    cut=cut,
                    n_boot=n_boot,
                )
    keep = np.isfinite(scores) & np.isfinite(labels)
    rows = frame.loc[keep].copy()
    rows["good"] = positive_labels(labels, cut)[keep]
    found = pd.DataFrame(columns=["row", "score", "label", "kind", "gap"])
    if math.isfinite(overall.threshold.value):
        found = disagreements(
            scores, labels, threshold=overall.threshold.value, cut=cut, limit=limit
        )
        found.insert(0, "row", frame["row"].to_numpy()[found["position"].to_numpy(dtype=int)])
        extra = [c for c in ("user_input", "response", by) if c and c in frame.columns]
        for c in extra:
            found[c] = frame[c].to_numpy()[found["position"].to_numpy(dtype=int)]
        found = found.drop(columns=["position"])
    return AgreementView(
        overall=overall,
        by_group=by_group,
        group=by if by_group else None,
        frame=rows.reset_index(drop=True),
        disagreements=found,
        unlabelled=int((np.isfinite(scores) & ~np.isfinite(labels)).sum()),
    )


def few_labels(view: AgreementView) -> str:
    """A warning (markdown, numbers only) when the labels are too few to trust the figures:
    under :data:`FEW_LABELS` labelled rows, or a headline interval :data:`WIDE_CI` wide or
    wider; ``""`` otherwise."""
    name, figure = view.overall.headline
    rows, width = view.overall.rows, figure.high - figure.low
    wide = math.isfinite(width) and width >= WIDE_CI
    if rows >= FEW_LABELS and not wide:
        return ""
    why = (
        f"**{rows} labelled rows** are too few to say much"
        if rows < FEW_LABELS
        else f"the {name} could be anywhere between {figure.low:.2f} and {figure.high:.2f}"
    )
    return (
        f"{why[0].upper()}{why[1:]}: with under {FEW_LABELS} labels (or an interval "
        f"{WIDE_CI} wide or more) the {name}, the best threshold and the precision move a lot "
        "with each label. Label more rows (about 20 at least, from several questions) before "
        "relying on them."
    )


#: above this many labelled rows the run's columns are read whole (its Parquet segments) with
#: the labels beside them, not the labelled rows one at a time from SQLite (a million labels:
#: the page's computation 8.1 s instead of 11.5 s, bench/RESULTS.md)
WHOLE_READ = 50_000


def _resamples(a: Agreement) -> str:
    bins = f", each on the scores in {a.bins:,} bins" if a.bins else ""
    return f"{a.n_boot:,} resamples{bins}"


def resampling_note(view: AgreementView) -> str:
    """How the intervals were resampled, in words: the same for every line of the figures, or
    all rows' and each variant's when they differ (a variant under ``BOOT_ROWS`` labelled rows
    takes 2,000 resamples while all rows, above, take 200; see
    :func:`relevancy.analysis.agreement.agreement` for the score bins each sees)."""
    overall = _resamples(view.overall)
    others = {_resamples(a) for a in view.by_group.values() if a.n_boot}
    if not others or others == {overall}:
        return overall
    return f"all rows: {overall}; by {view.group or 'group'}: {'; '.join(sorted(others))}"


def load(
    store: RunStore,
    run_id: int,
    *,
    by: str | None = "variant",
    cut: float | None = None,
    n_boot: int | None = None,
) -> AgreementView:
    """:func:`compute` on a run of the store: its scores and each row's label (the
    dashboard's when set, else the input's); ``unlabelled`` counts the run's scored rows
    without one. The answers are read for the disagreements only."""
    info = store.get_run(run_id)
    by = by if by and by in info.columns else None
    names = ["score", "user_input", *([by] if by else [])]
    labels = store.labels(run_id, details=False)
    if len(labels) > WHOLE_READ:
        rows = store.columns(run_id, names).merge(labels, on="row")
        rows = rows.sort_values("row", kind="stable").reset_index(drop=True)
    else:  # the labelled rows only: a million-row run with a few hundred labels reads those
        query = RowQuery(sort=SORTS[2], labelled=True)
        rows = store.columns(run_id, [*names, "label"], query=query)
    view = compute(rows, by=by, cut=cut, n_boot=n_boot)
    scored = store.count(run_id, RowQuery(status="scored"))
    found = view.disagreements
    if len(found):
        answers = store.inputs(run_id, rows=found["row"].astype(int).tolist())["response"]
        found = found.assign(response=answers.reindex(found["row"].astype(int)).to_numpy())
    return replace(view, disagreements=found, unlabelled=max(0, scored - view.overall.rows))


def _cell(x: Interval) -> str:
    return x.format()


def figures_table(view: AgreementView) -> pd.DataFrame:
    """One line per group ("all labelled rows", then each variant): rows, good/bad, the
    headline figure(s), the best threshold, its precision and recall, as text with CIs."""
    items = [("all labelled rows", view.overall), *view.by_group.items()]
    graded = view.overall.kind == "graded"
    out = []
    for name, a in items:
        line = {
            "rows": name,
            "labelled": a.rows,
            "good": a.positives,
            "bad": a.negatives,
        }
        if graded:
            line["Spearman"] = _cell(a.spearman)
        line["AUROC"] = _cell(a.auroc)
        line["best threshold"] = _cell(a.threshold)
        line["precision"] = _cell(a.precision)
        line["recall"] = _cell(a.recall)
        out.append(line)
    return pd.DataFrame(out)


def chart_note(view: AgreementView, *, points: int = CHART_POINTS) -> str | None:
    """What the chart's dots are when they are a sample of the labelled rows (None: all)."""
    rows = len(view.frame)
    if rows <= points:
        return None
    uses = (
        "the boxes and every figure on this page use"
        if view.overall.kind == "binary"
        else "every figure on this page uses"
    )
    return f"Dots: {points:,} of the {rows:,} labelled rows, drawn at random; {uses} all of them."
