"""Tables in and out: readers, column mapping, row checks, the results writer, and importers
of other tools' exports (``relevancy.io.importers``, one module per format).

Everything a caller needs is importable from here::

    from relevancy.io import read_table, guess_mapping, inspect_rows, TableWriter
"""

from relevancy.io import checks, columns, readers, writer
from relevancy.io.checks import *  # noqa: F403
from relevancy.io.columns import *  # noqa: F403
from relevancy.io.readers import *  # noqa: F403
from relevancy.io.writer import *  # noqa: F403

__all__ = [*columns.__all__, *checks.__all__, *readers.__all__, *writer.__all__]
