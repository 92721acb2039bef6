"""What a run costs: tokens billed, tokens the cache saved, time, and money at a price table.

Every row records the tokens it took (``RelevancyResult.usage``): ``prompt_tokens`` and
``completion_tokens`` of its generations (the API's ``usage``; llama.cpp's own count for the
embedded model) and ``embedding_tokens``, the tokens of the texts this row sent to the embedding
backend (texts already embedded, in memory or in the cache, cost nothing). A row whose
generations came from the cache (``cached``) was billed no generation tokens: its recorded
tokens are what the cache saved.

The cost of a row, in US dollars, with prices per 1M tokens::

    cost = (prompt_tokens * llm.input + completion_tokens * llm.output
            + embedding_tokens * embedder.input) / 1e6      (generation terms 0 when cached)

Prices are a table the user edits (:data:`DEFAULT_PRICES` are OpenAI's list prices, dated
:data:`PRICES_AS_OF`); the embedded models cost nothing. A model without a price leaves the cost
unknown and says which model to price, never a silent 0.

Example
-------
>>> import pandas as pd
>>> rows = pd.DataFrame({"llm": ["openai:gpt-4o-mini"] * 2,
...                      "embeddings": ["openai:text-embedding-3-small"] * 2,
...                      "cached": [False, True], "prompt_tokens": [300, 300],
...                      "completion_tokens": [40, 40], "embedding_tokens": [60, 0],
...                      "seconds": [1.5, 0.01]})
>>> t = usage_totals(rows)
>>> (t.prompt_tokens, t.completion_tokens, t.embedding_tokens, t.saved_tokens)
(300, 40, 60, 340)
>>> round(t.cost, 8)  # (300 * 0.15 + 40 * 0.60 + 60 * 0.02) / 1e6
7.02e-05
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from relevancy.errors import InputError

__all__ = [
    "Price",
    "DEFAULT_PRICES",
    "PRICES_AS_OF",
    "PRICES_SOURCE",
    "TOKEN_COLUMNS",
    "UsageTotals",
    "parse_price",
    "price_for",
    "prices_from_rows",
    "row_costs",
    "usage_totals",
    "group_usage",
    "describe_prices",
    "money",
]

#: the per-row columns a run keeps for this (exports and the run store)
TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens", "embedding_tokens")


@dataclass(frozen=True)
class Price:
    """US dollars per 1M tokens: ``input`` (prompt, or embedded text) and ``output``."""

    input: float
    output: float = 0.0

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
                raise InputError(
                    f"a price must be a number >= 0 dollars per 1M tokens, got {value!r}"
                )


#: When the defaults were taken from OpenAI's pricing page; edit them for your contract.
PRICES_AS_OF = "2025-08"
PRICES_SOURCE = "OpenAI list prices, standard tier (openai.com/api/pricing)"
#: Model name → price. Looked up by the model part of a backend name (``openai:gpt-4o-mini``,
#: ``azure:gpt-4o-mini``), also without a date suffix (``gpt-4o-mini-2024-07-18``).
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "o4-mini": Price(1.10, 4.40),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "text-embedding-3-small": Price(0.02),
    "text-embedding-3-large": Price(0.13),
    "text-embedding-ada-002": Price(0.10),
}
_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_FREE = Price(0.0, 0.0)


def _model(name: str) -> tuple[str, str]:
    kind, _, model = str(name).partition(":")
    return kind.lower(), model


def price_for(name: str, prices: Mapping[str, Price] | None = None) -> Price | None:
    """The price of a backend (``"openai:gpt-4o-mini"``, ``"local:..."``); None when unknown.

    Embedded (``local:``) models are free. A user's table is looked up by the full backend
    name first, then by the model name, then by the model name without a date suffix.
    """
    table = DEFAULT_PRICES if prices is None else prices
    kind, model = _model(name)
    if kind == "local":
        return _FREE
    for key in (str(name), model, _DATE_SUFFIX.sub("", model)):
        if key in table:
            return table[key]
    return None


def parse_price(text: str) -> tuple[str, Price]:
    """``"gpt-4o-mini=0.15/0.60"`` → ``("gpt-4o-mini", Price(0.15, 0.60))``; the output price may
    be left out (embedding models). Raises a one-line :class:`InputError` quoting bad text."""
    model, sep, amounts = str(text).partition("=")
    parts = amounts.split("/")
    try:
        if not sep or not model.strip() or len(parts) > 2:
            raise ValueError
        numbers = [float(p) for p in parts]
    except ValueError:
        raise InputError(
            f"bad price {text!r}: write MODEL=INPUT/OUTPUT in dollars per 1M tokens, "
            "e.g. gpt-4o-mini=0.15/0.60 (or MODEL=INPUT for an embedding model)"
        ) from None
    return model.strip(), Price(*numbers)


def prices_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, Price]:
    """A price table from records with ``model``, ``input`` and ``output`` (an edited table);
    rows without a model are skipped, an empty output price is 0."""
    table: dict[str, Price] = {}
    for row in rows:
        model = str(row.get("model") or "").strip()
        if not model:
            continue
        out = row.get("output")
        out = 0.0 if out is None or (isinstance(out, float) and math.isnan(out)) else out
        try:
            table[model] = Price(float(row.get("input")), float(out))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(
                f"price of {model!r} must be numbers of dollars per 1M tokens, got "
                f"{row.get('input')!r} / {row.get('output')!r}"
            ) from None
    return table


def _ints(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(0, index=frame.index, dtype="int64")
    return pd.to_numeric(frame[column], errors="coerce").fillna(0).astype("int64")


def _flags(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    values = frame[column]
    if values.dtype == object:
        values = values.astype(str).str.lower().isin(("true", "1", "1.0", "yes"))
    return values.fillna(False).astype(bool)


def row_costs(frame: pd.DataFrame, prices: Mapping[str, Price] | None = None) -> pd.Series:
    """Each row's cost in dollars (NaN where a model of the row has no price).

    ``frame`` has ``llm``, ``embeddings``, ``cached`` and the :data:`TOKEN_COLUMNS` (an export of
    ``relevancy score`` or a run's columns).
    """
    billed = ~_flags(frame, "cached")
    llm = frame.get("llm", pd.Series("", index=frame.index)).astype(str)
    emb = frame.get("embeddings", pd.Series("", index=frame.index)).astype(str)
    # astype: mapping an empty string column keeps its string dtype
    p_in = llm.map(lambda n: _rate(n, prices, "input")).astype("float64")
    p_out = llm.map(lambda n: _rate(n, prices, "output")).astype("float64")
    p_emb = emb.map(lambda n: _rate(n, prices, "input")).astype("float64")
    prompt, completion = _ints(frame, "prompt_tokens"), _ints(frame, "completion_tokens")
    embedded = _ints(frame, "embedding_tokens")
    # a term is 0 when nothing was billed, whatever the price; NaN when billed but unpriced
    gen = (prompt * p_in + completion * p_out).where(billed & (prompt + completion > 0), 0.0)
    embedding = (embedded * p_emb).where(embedded > 0, 0.0)
    return (gen + embedding) / 1e6


def _rate(name: str, prices: Mapping[str, Price] | None, side: str) -> float:
    price = price_for(name, prices)
    return math.nan if price is None else float(getattr(price, side))


@dataclass(frozen=True)
class UsageTotals:
    """A run's (or a file's) tokens, time and cost, as :func:`usage_totals` adds them up."""

    rows: int  #: rows with a result
    cached_rows: int  #: rows whose generations came from the cache
    prompt_tokens: int  #: generation prompt tokens billed (rows not from the cache)
    completion_tokens: int  #: generation completion tokens billed
    embedding_tokens: int  #: tokens sent to the embedding backend
    saved_tokens: int  #: generation tokens the cache saved (what its rows took the first time)
    seconds: float  #: sum of the rows' times (rows run concurrently: more than the wall time)
    cost: float  #: dollars; NaN when a model has no price
    unpriced: tuple[str, ...] = field(default=())  #: models without a price
    models: tuple[str, ...] = field(default=())  #: models used
    #: False for rows scored before embedding tokens were recorded (their count is unknown)
    embedding_recorded: bool = True

    @property
    def embedded_text(self) -> str:
        """``"3,456 embedded"`` or ``"embeddings not recorded"``."""
        if not self.embedding_recorded:
            return "embedding tokens not recorded"
        return f"{self.embedding_tokens:,} embedded"

    @property
    def billed_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens + self.embedding_tokens

    def describe_tokens(self) -> str:
        """``"12,345 in + 2,345 out (generation), 3,456 embedded; 412 rows from cache: 0 tokens
        (saved 10,000)"``."""
        text = (
            f"{self.prompt_tokens:,} in + {self.completion_tokens:,} out (generation), "
            f"{self.embedded_text}"
        )
        if self.cached_rows:
            text += (
                f"; {self.cached_rows:,} rows from cache: 0 generation tokens "
                f"(saved {self.saved_tokens:,})"
            )
        return text

    def describe_cost(self) -> str:
        """``"$0.0123"``, ``"$0 (embedded models)"`` or which model needs a price."""
        if math.isnan(self.cost):
            return f"unknown: no price for {', '.join(self.unpriced)}"
        if self.billed_tokens == 0:
            return "$0 (nothing billed)"
        if self.cost == 0 and all(m.startswith("local:") for m in self.models):
            return "$0 (embedded models)"
        return money(self.cost)


def money(dollars: float) -> str:
    """``"$0.0123"``, ``"$12.35"``; ``"unknown"`` for NaN."""
    if math.isnan(dollars):
        return "unknown"
    if dollars == 0:
        return "$0"
    if dollars < 0.01:
        return f"${dollars:.4f}"
    return f"${dollars:,.2f}"


def usage_totals(frame: pd.DataFrame, prices: Mapping[str, Price] | None = None) -> UsageTotals:
    """Add up the tokens, time and cost of scored rows (see the module docstring's formula).

    ``frame``: one row per result with ``llm``, ``embeddings``, ``cached``, ``seconds`` and the
    :data:`TOKEN_COLUMNS`; missing columns count as 0. A ``rows`` column makes each line stand
    for that many results, its tokens and seconds already summed (what the run store's
    :meth:`~relevancy.runs.RunStore.usage` returns for a large run).
    """
    cached = _flags(frame, "cached")
    weight = _ints(frame, "rows") if "rows" in frame.columns else pd.Series(1, index=frame.index)
    gen = _ints(frame, "prompt_tokens") + _ints(frame, "completion_tokens")
    costs = row_costs(frame, prices)
    models: list[str] = []
    for column in ("llm", "embeddings"):
        if column in frame.columns:
            models += [str(m) for m in frame[column].dropna().unique() if str(m)]
    unpriced = tuple(sorted({m for m in models if price_for(m, prices) is None}))
    seconds = pd.to_numeric(frame.get("seconds", pd.Series(dtype=float)), errors="coerce")
    recorded = "embedding_tokens" not in frame.columns or bool(
        pd.to_numeric(frame["embedding_tokens"], errors="coerce").notna().any() or frame.empty
    )
    return UsageTotals(
        rows=int(weight.sum()),
        cached_rows=int(weight[cached].sum()),
        prompt_tokens=int(_ints(frame, "prompt_tokens")[~cached].sum()),
        completion_tokens=int(_ints(frame, "completion_tokens")[~cached].sum()),
        embedding_tokens=int(_ints(frame, "embedding_tokens").sum()),
        saved_tokens=int(gen[cached].sum()),
        seconds=float(seconds.fillna(0).sum()),
        cost=math.nan if costs.isna().any() else float(costs.sum()),
        unpriced=unpriced,
        models=tuple(dict.fromkeys(models)),
        embedding_recorded=recorded,
    )


def group_usage(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows' tokens and seconds summed per (``llm``, ``embeddings``, ``cached``), with a
    ``rows`` count: a small frame that :func:`usage_totals` reads as it reads the rows, and
    that chunks of a large file can be concatenated into."""
    columns = ["llm", "embeddings", "cached"]
    data = pd.DataFrame({c: frame[c] if c in frame.columns else "" for c in columns[:2]})
    data["cached"] = _flags(frame, "cached")
    data["rows"] = _ints(frame, "rows") if "rows" in frame.columns else 1
    data["seconds"] = pd.to_numeric(frame.get("seconds", 0.0), errors="coerce")
    for column in TOKEN_COLUMNS:
        data[column] = _ints(frame, column)
    return data.groupby(columns, as_index=False, dropna=False).sum(min_count=0)


def describe_prices(models: Iterable[str], prices: Mapping[str, Price] | None = None) -> str:
    """``"gpt-4o-mini $0.15/$0.60, text-embedding-3-small $0.02 per 1M tokens (OpenAI list
    prices of 2025-08)"``: the prices a cost was worked out with, and where they came from."""
    parts, defaults = [], True
    for name in dict.fromkeys(models):
        price = price_for(name, prices)
        if price is None or name.startswith("local:"):
            continue
        model = _model(name)[1] or name
        defaults &= price == price_for(name, DEFAULT_PRICES)
        rate = f"${price.input:g}" + (f"/${price.output:g}" if price.output else "")
        parts.append(f"{model} {rate}")
    if not parts:
        return ""
    source = f"{PRICES_SOURCE} of {PRICES_AS_OF}" if defaults else "prices you set"
    return f"{', '.join(parts)} per 1M tokens ({source})"
