"""Analysis: what scored rows say, computed from results and tables (no models, no store).

Explanations in words (``explain``), agreement with human labels (``agreement``), the chance
level (``chance``), pairing and comparing runs (``compare``), summaries (``summary``),
projections of embeddings (``projection``), stability statistics (``stability``) and tokens and
cost (``cost``). Imports ``core`` and ``io`` only.
"""
