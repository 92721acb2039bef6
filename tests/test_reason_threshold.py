"""A row's main reason depends on the threshold (``ok`` above it, ``drifting`` below; an answer
that dodges is ``evasive`` only below it), so the reasons counted and filtered on are read at
the threshold asked for, not the one the run stored them at (issue 46, item 8)."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

import pandas as pd
import pytest

from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.core.triage import triage
from relevancy.runs import RowQuery, RunStore

#: answers that dodge in so many words, and answers that do not
DODGES = ["I'm not sure, but it may be in Paris.", "I can't help with that, sorry."]
PLAIN = ["It is in Paris, on the Seine.", "The tower is 330 metres tall."]


def _rows(n: int = 48) -> list[RelevancyResult]:
    rows = []
    for i in range(n):
        score = 0.2 + 0.75 * i / (n - 1)  # 0.20 to 0.95: rows on each side of 0.3, 0.5, 0.8
        sims = [score, score + 0.02, score - 0.02]
        used = 2 if i % 11 == 5 or i == 12 else 3  # a few rows scored from 2 of 3 questions
        result = RelevancyResult(
            user_input="Where is the Eiffel Tower?",
            response=(DODGES if i % 3 == 0 else PLAIN)[i % 2],
            value=score,
            questions=[
                QuestionScore(f"Where is thing {i}.{k}?", s if k < used else None, None)
                for k, s in enumerate(sims)
            ],
            answer_similarity=0.55,  # close enough not to be off topic, not a suspect
            strictness=3,
            noncommittal=i % 13 == 4,
        )
        stored = triage(result, 0.5)  # as the run stores it, at its own threshold
        rows.append(dataclasses.replace(result, reason=stored.reason, flags=list(stored.flags)))
    return rows


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("reasons") / "runs.sqlite3")
    rows = _rows()
    frame = pd.DataFrame({"user_input": [r.user_input for r in rows]})
    frame["response"] = [r.response for r in rows]
    run = store.create_run("reasons", {"threshold": 0.5}, frame)
    store.append_results(run, list(enumerate(rows)))
    return store, run, rows


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.65, 0.8, 0.95])
def test_counts_and_the_filter_read_each_reason_at_the_threshold(scored, threshold):
    store, run, rows = scored
    expected = [triage(r, threshold).reason for r in rows]
    assert store.counts(run, threshold=threshold) == dict(
        sorted(Counter(expected).items(), key=lambda kv: -kv[1])
    )
    for reason in sorted(set(expected)):
        query = RowQuery(reasons=(reason,), threshold=threshold, sort="row")
        page = store.query(run, query, limit=100)
        assert page["row"].tolist() == [i for i, e in enumerate(expected) if e == reason]
        assert set(page["reason"]) == {reason}  # the grid's column says the same
        assert store.count(run, query) == len(page)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.65, 0.8, 0.95])
def test_the_also_flagged_filter_reads_each_flag_at_the_threshold(scored, threshold):
    """ "Also flagged" keeps the rows with a flag as the triage gives it at the threshold asked
    for: drifting and evasive move with the threshold; the other flags do not."""
    store, run, rows = scored
    flags = [set(triage(r, threshold).flags) | {triage(r, threshold).reason} for r in rows]
    for flag in ("drifting", "evasive", "ok", "incomplete_generation", "noncommittal"):
        query = RowQuery(flags=(flag,), threshold=threshold, decided_at=0.5, sort="row")
        page = store.query(run, query, limit=100)
        assert page["row"].tolist() == [i for i, f in enumerate(flags) if flag in f], flag
        assert store.count(run, query) == len(page)


def test_the_cases_that_change_are_there(scored):
    """The set has rows that swap ok and drifting, dodge only below 0.8, and stop being evasive
    below 0.3 (then the next flag, else ok), so the test above checks each."""
    _, _, rows = scored
    at = {t: [triage(r, t).reason for r in rows] for t in (0.3, 0.5, 0.8)}
    pairs = set(zip(at[0.5], at[0.8], strict=True)) | set(zip(at[0.5], at[0.3], strict=True))
    assert {("ok", "drifting"), ("drifting", "ok"), ("ok", "evasive")} <= pairs
    assert ("evasive", "ok") in pairs and ("evasive", "incomplete_generation") in pairs
    assert Counter(at[0.8])["ok"] < Counter(at[0.5])["ok"]


def test_without_a_threshold_the_stored_reasons_are_read(scored):
    store, run, rows = scored
    assert store.counts(run) == dict(
        sorted(Counter(r.reason for r in rows).items(), key=lambda kv: -kv[1])
    )


@pytest.mark.slow
def test_the_dataset_page_counts_and_filters_reasons_at_the_sidebar_threshold():
    """The demo at 0.80 (its reasons were stored at 0.50): the counts caption, the Reason
    filter and the grid's reason column all say what the triage says at 0.80."""
    from relevancy.runs import demo_results

    from helpers import DEMO, app, ok, visit

    demo = demo_results()
    at = visit(app(), "1_Dataset.py")
    at.sidebar.slider(key="_w_sb_threshold").set_value(0.8).run()
    ok(at)
    expected = Counter(triage(r, 0.8).reason for r in demo)
    assert expected["ok"] < Counter(r.reason for r in demo)["ok"]  # some ok rows are below 0.8
    caption = next(c.value for c in at.caption if c.value.startswith("By main reason:"))
    said = {name: int(n.replace(",", "")) for n, name in re.findall(r"([\d,]+) (\w+)", caption)}
    assert said == dict(expected) and "0.80" in caption
    at.multiselect(key="ds_reasons").set_value(["ok"]).run()
    ok(at)
    grid = next(d.value for d in at.dataframe if d.proto.id.endswith(f"-ds_table_{DEMO}"))
    wanted = [i + 1 for i, r in enumerate(demo) if triage(r, 0.8).reason == "ok"]
    assert sorted(grid["row"]) == wanted and set(grid["reason"]) == {"ok"}
    assert (grid["score"] >= 0.8).all()


def test_distributions_reason_table_reads_the_sidebar_threshold():
    """Distributions' rows by main reason count each row's reason at the sidebar's threshold,
    as the Dataset page's filter and cards do (they read the stored ones)."""
    from relevancy.paths import default_store_path

    from helpers import DEMO, app, ok, visit

    store = RunStore(default_store_path())
    at = app(query={"run": str(DEMO)})
    visit(at, "2_Distributions.py")
    at.segmented_control(key="dist_split").set_value("none").run()
    for threshold in (0.5, 0.7, 0.3):
        at.sidebar.slider(key="_w_sb_threshold").set_value(threshold).run()
        ok(at)
        table = next(d.value for d in at.dataframe if "all rows" in d.value.columns)
        cells = table["all rows"].items()
        shown = {k: int(str(v).split(" ")[0].replace(",", "")) for k, v in cells}
        assert shown == store.counts(DEMO, threshold=threshold), threshold
    assert store.counts(DEMO, threshold=0.7) != store.counts(DEMO, threshold=0.5)
