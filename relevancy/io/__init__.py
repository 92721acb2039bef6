"""Tables in and out: readers, column mapping, row checks, the results writer, and importers
of other tools' exports (``relevancy.io.importers``, one module per format).

Everything a caller needs is importable from here::

    from relevancy.io import read_table, guess_mapping, inspect_rows, TableWriter
"""

from relevancy.io.checks import LONG_TEXT_CHARS, RowInspector, RowProblem, check_text, inspect_rows
from relevancy.io.columns import (
    COLUMN_ALIASES,
    ROLES,
    apply_mapping,
    guess_mapping,
    normalize_columns,
)
from relevancy.io.readers import FORMATS, iter_table, read_table, read_table_bytes
from relevancy.io.writer import (
    OUTPUT_FORMATS,
    RESULT_COLUMNS,
    TableWriter,
    result_record,
    results_to_frame,
    write_results,
)

__all__ = [
    "ROLES",
    "COLUMN_ALIASES",
    "guess_mapping",
    "apply_mapping",
    "normalize_columns",
    "LONG_TEXT_CHARS",
    "check_text",
    "RowProblem",
    "RowInspector",
    "inspect_rows",
    "FORMATS",
    "read_table",
    "read_table_bytes",
    "iter_table",
    "OUTPUT_FORMATS",
    "RESULT_COLUMNS",
    "result_record",
    "results_to_frame",
    "write_results",
    "TableWriter",
]
