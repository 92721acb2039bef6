"""Scoring: the metric and everything that runs it.

The metric (``metric``: :class:`AnswerRelevancy`), building it from specs and checking its
servers (``config``), the one scoring loop shared by the CLI, the dashboard and Ray
(``pipeline``), a file of any size (``files``), repeats under other seeds (``repeats``), the
estimate before a run (``estimate``), the judge check (``judge``) and Ray (``distributed``).
"""
