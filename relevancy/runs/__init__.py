"""Saved runs: the run store (SQLite), its schema and migrations, exports and the bundled demo.

>>> from relevancy.runs import RunStore
>>> store = RunStore("/tmp/runs.sqlite3")  # doctest: +SKIP
>>> [run.label for run in store.list_runs()]  # doctest: +SKIP
"""

from relevancy.runs import demo, query, store
from relevancy.runs.demo import *  # noqa: F403
from relevancy.runs.export import EXPORT_FORMATS
from relevancy.runs.query import *  # noqa: F403
from relevancy.runs.rows import clean_settings
from relevancy.runs.store import *  # noqa: F403

__all__ = [*store.__all__, *query.__all__, *demo.__all__, "EXPORT_FORMATS", "clean_settings"]
