"""What a run looks like outside the dashboard, with no Streamlit: the plotly figures the
dashboard draws (:mod:`~relevancy.report.charts`, :mod:`~relevancy.report.compare_charts`), the
self-contained HTML report of a run (:func:`build_report`, in
:mod:`~relevancy.report.html`) and the addresses that open a run's rows in the dashboard
(:mod:`~relevancy.report.links`).

Both the dashboard and ``relevancy score --mlflow-run`` (its HTML artifact) use it; it needs
plotly (the ``dashboard`` extra), imported where a figure is drawn.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_report"]


def __getattr__(name: str) -> Any:
    if name == "build_report":  # plotly and pandas load with the report, not with the package
        from relevancy.report.html import build_report  # lazy

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
