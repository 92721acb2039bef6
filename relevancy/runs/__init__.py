"""Saved runs: the run store (SQLite), its schema and migrations, exports and the bundled demo.

>>> from relevancy.runs import RunStore
>>> store = RunStore("/tmp/runs.sqlite3")  # doctest: +SKIP
>>> [run.label for run in store.list_runs()]  # doctest: +SKIP
"""

from relevancy.runs.demo import DEMO_RUN_NAME, demo_inputs, demo_results, import_demo
from relevancy.runs.export import EXPORT_FORMATS
from relevancy.runs.query import SORTS, RowQuery
from relevancy.runs.rows import clean_settings
from relevancy.runs.store import RunData, RunInfo, RunStore

__all__ = [
    "RunStore",
    "RunInfo",
    "RunData",
    "RowQuery",
    "SORTS",
    "EXPORT_FORMATS",
    "clean_settings",
    "DEMO_RUN_NAME",
    "demo_inputs",
    "demo_results",
    "import_demo",
]
