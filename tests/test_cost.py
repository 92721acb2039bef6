"""Tokens, time and cost: what each row records (the toy server's usage, the embedded models'
own tokenizers), the sums and prices, the estimate before a run, and the dashboard's views."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from relevancy import AnswerRelevancy
from relevancy.analysis.cost import (
    DEFAULT_PRICES,
    Price,
    describe_prices,
    group_usage,
    parse_price,
    price_for,
    prices_from_rows,
    row_costs,
    usage_totals,
)
from relevancy.backends._openai_client import share_by_length
from relevancy.cli import main
from relevancy.errors import InputError
from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.scoring.estimate import (
    Estimate,
    InputStats,
    estimate,
    measure_sample,
    measured_rates,
    record_speed,
)
from relevancy.testing._toy_model import word_count
from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL

from helpers import (
    ROOT,
    app,
    choose_toy_backend,
    cli_backends,
    metrics,
    ok,
    toy_metric,
    visit,
    write_rows,
)


def rows(n: int, *, repeat_question: bool = False) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "user_input": [
                "What is the tallest mountain?" if repeat_question else f"What is peak {i} called?"
                for i in range(n)
            ],
            "response": [
                f"Peak {i} is called Mount {'Long ' * (i % 5)}Example and it rises far above "
                "the valley floor."
                for i in range(n)
            ],
        }
    )


# --- the sums and the prices -------------------------------------------------------------------


def test_price_lookup_parse_and_table():
    assert price_for("openai:gpt-4o-mini") == Price(0.15, 0.60)
    assert price_for("azure:gpt-4o-mini-2024-07-18") == Price(0.15, 0.60)  # date suffix dropped
    assert price_for("local:SmolLM2-135M-Instruct") == Price(0, 0)  # embedded: free
    assert price_for("openai:toy-chat") is None
    assert price_for("openai:toy-chat", {"toy-chat": Price(1, 2)}) == Price(1, 2)
    assert price_for("openai:gpt-4o-mini", {"openai:gpt-4o-mini": Price(9, 9)}) == Price(9, 9)
    assert parse_price("gpt-4o-mini=0.15/0.6") == ("gpt-4o-mini", Price(0.15, 0.6))
    assert parse_price(" text-embedding-3-small = 0.02 ") == ("text-embedding-3-small", Price(0.02))
    for bad in ("gpt-4o-mini", "=1/2", "m=a/b", "m=1/2/3", "m=-1"):
        with pytest.raises(InputError, match=re.escape(repr(bad)) + "|>= 0"):
            parse_price(bad)
    table = prices_from_rows([{"model": " m ", "input": 1, "output": None}, {"model": ""}])
    assert table == {"m": Price(1.0, 0.0)}
    with pytest.raises(InputError, match="price of 'x'"):
        prices_from_rows([{"model": "x", "input": "lots"}])
    assert describe_prices(["openai:gpt-4o-mini", "local:x"]) == (
        "gpt-4o-mini $0.15/$0.6 per 1M tokens (OpenAI list prices, standard tier "
        "(openai.com/api/pricing) of 2025-08)"
    )
    assert describe_prices(["openai:m"], {"m": Price(1)}).endswith("(prices you set)")


def test_totals_bill_fresh_rows_and_count_what_the_cache_saved():
    frame = pd.DataFrame(
        {
            "llm": ["openai:gpt-4o-mini"] * 3,
            "embeddings": ["openai:text-embedding-3-small"] * 3,
            "cached": [False, True, "True"],  # a CSV export reads booleans back as text
            "prompt_tokens": [1000, 1000, 500],
            "completion_tokens": [100, 100, 50],
            "embedding_tokens": [200, 0, 10],
            "seconds": [2.0, 0.01, 0.02],
        }
    )
    t = usage_totals(frame)
    assert (t.rows, t.cached_rows) == (3, 2)
    assert (t.prompt_tokens, t.completion_tokens, t.embedding_tokens) == (1000, 100, 210)
    assert t.saved_tokens == 1650 and t.billed_tokens == 1310
    assert t.cost == pytest.approx((1000 * 0.15 + 100 * 0.60 + 210 * 0.02) / 1e6)
    assert t.describe_tokens().endswith("2 rows from cache: 0 generation tokens (saved 1,650)")
    # the grouped form (what the store and a chunked file give) sums to the same
    grouped = group_usage(pd.concat([group_usage(frame.iloc[:2]), group_usage(frame.iloc[2:])]))
    assert len(grouped) == 2 and usage_totals(grouped) == t
    # an unpriced model that billed tokens leaves the cost unknown, and says which
    other = frame.assign(llm="openai:my-finetune")
    assert math.isnan(usage_totals(other).cost)
    assert usage_totals(other).describe_cost() == "unknown: no price for openai:my-finetune"
    assert row_costs(other).isna().tolist() == [True, False, False]  # cached rows bill nothing
    free = frame.assign(llm="local:SmolLM2", embeddings="local:MiniLM")
    assert usage_totals(free).describe_cost() == "$0 (embedded models)"
    # a run with no scored row yet (its model columns read back as strings) costs nothing
    empty = frame.iloc[:0].astype({"llm": "string[pyarrow]", "embeddings": "string[pyarrow]"})
    assert row_costs(empty).dtype == "float64" and usage_totals(empty).cost == 0.0


def test_openai_embedding_tokens_are_shared_out_by_length():
    assert share_by_length(10, ["a", "bbbb"]) == [2, 8]
    assert sum(share_by_length(7, ["x", "yy", "zzz"])) == 7
    assert share_by_length(0, ["x"]) == [0]


# --- what rows record --------------------------------------------------------------------------


def test_rows_record_the_servers_usage_and_embedding_tokens_once(tmp_path, toy_server):
    data = rows(6, repeat_question=True)
    metric = toy_metric(toy_server, api_key="sk-test")
    results = metric.score_many(data)
    again = metric.score_many(data)
    stats = toy_server.stats()
    for r in results:
        assert r.usage["prompt_tokens"] > word_count(r.response)  # the prompt holds the answer
        assert r.usage["completion_tokens"] > 0 and not r.cached
    # every embedded text is paid for once, by one row: the rows add up to the server's usage
    embedded = [
        t
        for q in toy_server.requests
        if q["path"].endswith("/embeddings")
        for t in q["body"]["input"]
    ]
    assert sum(r.usage["embedding_tokens"] for r in results) == sum(map(word_count, embedded))
    assert len(set(embedded)) == len(embedded)  # the repeated question was embedded once
    assert stats["by_path"].get("/v1/embeddings", 0) >= 1
    # the second time everything comes from the cache: 0 tokens billed, the savings are known
    assert all(r.cached and r.usage["embedding_tokens"] == 0 for r in again)
    t = usage_totals(
        pd.DataFrame(
            [
                {"llm": r.llm, "embeddings": r.embeddings, "cached": r.cached, **r.usage}
                for r in again
            ]
        )
    )
    assert t.billed_tokens == 0 and t.saved_tokens == sum(
        r.usage["prompt_tokens"] + r.usage["completion_tokens"] for r in results
    )


@pytest.mark.models
def test_embedded_rows_count_tokens_with_the_models_own_tokenizers():
    from tokenizers import Tokenizer

    from relevancy.scoring.metric import _EmbeddingPlan

    metric = AnswerRelevancy(cache=False)
    data = rows(2)
    results = metric.score_many(data)
    tok = Tokenizer.from_file(str(ROOT / "relevancy" / "data" / "minilm_tokenizer.json"))
    tok.enable_truncation(max_length=256)
    tok.no_padding()
    for r in results:
        assert r.usage["prompt_tokens"] > 100 and r.usage["completion_tokens"] > 0  # llama.cpp
        usable = [q for q in r.questions if q.similarity is not None]
        assert usable
        plan_texts = set(
            _EmbeddingPlan.make(r.user_input, r.response, _usable(r), r.noncommittal_method).texts
        )
        expected = sum(len(tok.encode(t).ids) for t in plan_texts)
        assert r.usage["embedding_tokens"] <= expected  # shared exemplars are paid once
        assert r.usage["embedding_tokens"] > len(tok.encode(r.response).ids)


def _usable(r):
    from relevancy.core.result import Generation

    return [Generation(q.question, q.noncommittal) for q in r.questions if q.similarity is not None]


# --- the estimate before a run -----------------------------------------------------------------


def test_estimate_tokens_rough_then_measured_on_a_sample(tmp_path, toy_server):
    data = rows(40)
    metric = toy_metric(toy_server, api_key="sk-test", cache=str(tmp_path / "cache"))
    stats = InputStats.of(metric, data["user_input"], data["response"])
    rough = estimate(metric, stats)
    assert rough.token_basis.startswith("rough") and rough.tokens["prompt_tokens"] > 0
    assert math.isnan(rough.cost()) and rough.describe_cost().startswith("unknown")
    sample = measure_sample(metric, stats, 10)
    assert len(sample) == 10 and len({r.response for r in sample}) == 10
    assert measured_rates(metric) is not None
    stats = InputStats.of(metric, data["user_input"], data["response"])
    assert (stats.rows, stats.cached) == (40, 10)  # the sample is in the cache for the run
    plan = estimate(metric, stats)
    assert plan.token_basis.startswith("measured on 10 rows")
    actual = metric.score_many(data)
    fresh = [r for r in actual if not r.cached]
    for key in ("prompt_tokens", "completion_tokens", "embedding_tokens"):
        real = sum(r.usage[key] for r in fresh)
        assert plan.tokens[key] == pytest.approx(real, rel=0.15), key
    prices = {CHAT_MODEL: Price(1, 2), EMBEDDING_MODEL: Price(0.5)}
    assert plan.cost(prices) > 0 and plan.describe_cost(prices).startswith("about $")


def test_the_estimate_prices_each_kind_of_token_at_its_own_rate():
    tokens = {
        "prompt_tokens": 1_200_000.0,
        "completion_tokens": 300_000.0,
        "embedding_tokens": 2_000_000.0,
    }
    plan = Estimate(
        10, 0, 1.0, 0.1, "test", tokens, "test", llm="openai:gen-x", embeddings="openai:emb-x"
    )
    prices = {"gen-x": Price(0.5, 4.0), "emb-x": Price(0.25)}
    # the same tokens as one billed row, priced by row_costs (the Runs page's sum)
    row = pd.DataFrame(
        [{**tokens, "llm": "openai:gen-x", "embeddings": "openai:emb-x", "cached": False}]
    )
    assert plan.cost(prices) == pytest.approx(row_costs(row, prices).iloc[0])
    assert plan.cost(prices) == pytest.approx(1.2 * 0.5 + 0.3 * 4.0 + 2.0 * 0.25)
    assert plan.describe_cost(prices) == "about $2.30"


def test_the_estimated_time_counts_only_the_rows_to_score(tmp_path, toy_server):
    metric = toy_metric(toy_server, api_key="sk-test", cache=str(tmp_path / "cache"))
    data = rows(12)
    metric.score_many(data.head(5))  # 5 rows in the cache
    record_speed(metric, rows=10, seconds=5.0)  # 0.5 s a row
    plan = estimate(metric, 100, cached=40)
    assert (plan.seconds_per_row, plan.seconds) == (0.5, 60 * 0.5)
    assert plan.describe().startswith("about 30 s for 60 rows (0.50 s/row, measured on 10 rows")
    # from the rows' text: the rows already in the cache take no time
    stats = InputStats.of(metric, data["user_input"], data["response"])
    assert (stats.rows, stats.cached) == (12, 5)
    assert estimate(metric, stats).seconds == pytest.approx(7 * 0.5)


def test_cli_prints_tokens_cost_and_the_cache_savings(tmp_path, capsys, toy_server):
    src = tmp_path / "in.csv"
    write_rows(src, rows(30).rename(columns={"user_input": "question", "response": "answer"}))
    backends = cli_backends(toy_server, "-q")
    prices = ["--price", f"{CHAT_MODEL}=1/2", "--price", f"{EMBEDDING_MODEL}=0.5"]
    assert main(["score", str(src), "--estimate", "--sample", "8", *prices, *backends]) == 0
    err = capsys.readouterr().err
    assert "sample          scored 8 rows of the file" in err
    assert re.search(
        r"tokens        about [\d,.k]+ in \+ [\d,.k]+ out \(generation\), "
        r"[\d,.k]+ embedded \(measured on 8 rows",
        err,
    )
    assert re.search(
        r"cost          about \$[\d.]+ at toy-chat \$1/\$2, toy-embed \$0.5 per "
        r"1M tokens \(prices you set\)",
        err,
    )
    out = tmp_path / "out.csv"
    assert main(["score", str(src), "-o", str(out), "--save-run", "cost", *prices, *backends]) == 0
    text = capsys.readouterr().out
    assert main(["score", str(src), "-o", str(out), *backends]) == 0
    unpriced = capsys.readouterr().out
    assert main(["score", str(src), "--estimate", "--price", "nonsense", *backends]) == 2
    assert "bad price 'nonsense'" in capsys.readouterr().err
    exported = pd.read_csv(out)
    t = usage_totals(exported, {CHAT_MODEL: Price(1, 2), EMBEDDING_MODEL: Price(0.5)})
    assert t.cached_rows == 30 and t.billed_tokens == 0  # the second run: all from the cache
    tokens = re.search(
        r"tokens          ([\d,]+) in \+ ([\d,]+) out \(generation\), ([\d,]+) "
        r"embedded; 8 rows from cache: 0 generation tokens",
        text,
    )
    assert tokens, text
    cost = re.search(r"cost            \$([\d.]+) at toy-chat", text)
    p, c, e = (int(g.replace(",", "")) for g in tokens.groups())
    assert float(cost.group(1)) == pytest.approx((p * 1 + c * 2 + e * 0.5) / 1e6, rel=0.01)
    assert "30 rows from cache: 0 generation tokens" in unpriced
    assert "cost            $0 (nothing billed)" in unpriced
    # the saved run has the same totals
    store = RunStore(default_store_path())
    (run,) = store.list_runs()
    saved = usage_totals(store.usage(run.id))
    assert (saved.prompt_tokens, saved.completion_tokens, saved.embedding_tokens) == (p, c, e)


# --- the dashboard -----------------------------------------------------------------------------


def test_dashboard_prices_runs_totals_and_estimate(tmp_path, toy_server):
    """Runs page totals at the sidebar's prices; an edited price moves the cost; the Dataset
    page estimates tokens and cost before a run and measures on a sample."""
    src = write_rows(tmp_path / "in.csv", rows(12))
    backends = cli_backends(toy_server, "-q")
    assert (
        main(["score", str(src), "-o", str(tmp_path / "o.csv"), "--save-run", "toy", *backends])
        == 0
    )
    at = visit(app(), "5_Runs.py")
    (toy,) = [r for r in RunStore(default_store_path()).list_runs() if r.name == "toy"]
    at.session_state["active_run"] = toy.id
    at.run()
    figures = metrics(at)
    assert figures["Cost"] == "unknown" and figures["Rows from cache"] == "0"
    assert int(float(figures["Tokens billed"].rstrip("k")) * 1000) > 0
    # price the toy models in the sidebar's table: the cost becomes a figure
    table = at.session_state["sb_prices"]
    at.session_state["sb_prices"] = pd.concat(
        [
            table,
            pd.DataFrame(
                [
                    {"model": CHAT_MODEL, "input": 1.0, "output": 2.0},
                    {"model": EMBEDDING_MODEL, "input": 0.5, "output": 0.0},
                ]
            ),
        ],
        ignore_index=True,
    )
    at.run()
    expected = usage_totals(
        RunStore(default_store_path()).usage(toy.id),
        {CHAT_MODEL: Price(1, 2), EMBEDDING_MODEL: Price(0.5)},
    ).cost
    assert metrics(at)["Cost"] == f"${expected:.4f}"
    # the Dataset page: an estimate with tokens and cost, then measured on a sample
    visit(choose_toy_backend(at, toy_server), "1_Dataset.py")
    at.segmented_control(key="_w_ds_source").set_value("Bundled demo").run()
    ok(at)
    captions = " ".join(c.value for c in at.caption)
    assert "🔢 Tokens: about" in captions
    assert "measured on 12 rows" in captions  # the CLI run above measured these models
    assert "💲 Cost: about \\$" in captions  # priced in the sidebar above (escaped markdown)
    at.button(key="ds_measure").click().run()
    ok(at)
    captions = " ".join(c.value for c in at.caption)
    assert "measured on 20 rows" in captions
    assert any("Measured on 20 rows" in s.value for s in at.success)


def test_default_prices_are_dated_and_cover_the_default_api_models():
    from relevancy.analysis.cost import PRICES_AS_OF
    from relevancy.backends import DEFAULT_OPENAI_EMBEDDINGS, DEFAULT_OPENAI_LLM

    assert re.fullmatch(r"\d{4}-\d{2}", PRICES_AS_OF)
    assert DEFAULT_OPENAI_LLM in DEFAULT_PRICES and DEFAULT_OPENAI_EMBEDDINGS in DEFAULT_PRICES


def test_the_sidebars_price_table_and_store_field_are_drawn_once_opened():
    """Closed, the Prices and Storage expanders draw nothing (a closed expander's widgets are
    still built in the browser: the price grid was 0.2 s of every page); opened, they do (the
    prices they set live in the session: see the test above, which sets them there)."""
    at = visit(app(), "5_Runs.py")
    assert not at.sidebar.dataframe and not [
        t for t in at.sidebar.text_input if t.key == "_w_sb_store"
    ]
    at.session_state["sb_prices_open"] = True
    at.session_state["sb_storage_open"] = True
    at.run()
    ok(at)
    (grid,) = at.sidebar.dataframe
    assert {"model", "input", "output"} <= set(grid.value.columns)
    assert at.sidebar.text_input(key="_w_sb_store").value == str(default_store_path())
    assert "Reset to the defaults" in [b.label for b in at.sidebar.button]
