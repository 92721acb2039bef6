"""Core: what a score is, with no I/O and no backends.

The formula (``formula``), a result and its one schema of columns (``result``, ``schema``),
text splitting (``text``), the modes (``modes``), the noncommittal rules (``noncommittal``),
the triage of reasons (``triage``), statistics (``stats``), the API prompt (``prompt``),
language identification (``language``), key redaction (``redact``) and ``run_sync``.
Modules here import nothing of relevancy outside ``core`` but ``relevancy.errors``.
"""
