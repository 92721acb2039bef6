"""Text from the data is never live on any page, in headless Chromium.

A run whose every text (question, answer, run name, variant names, a column of its own, the
prompt version the Over time page marks) holds Markdown links, bare URLs (which Streamlit's
Markdown links by itself), ``www.`` and e-mail addresses, HTML, ``javascript:``, an image,
bold and code is written into the app's store with the library. Home, every page and a row's
drill-down are opened with it active; on each, the drawn page (and every help tooltip, shown by
hovering its icon) holds no ``<a>`` whose address came from the data, and no bold, code or
image element the data made. (The Experiments page shows the sidebar's run name only.)
Screenshots: ``test-artifacts/14-hostile-compare.png``, ``14-hostile-embeddings.png``,
``14-hostile-drill-down.png``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from relevancy import AnswerRelevancy, Generation
from relevancy.runs import RunStore
from relevancy.testing.browser import vega_point
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

from .ui import open_page, settle, shot
from helpers import T0

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: every kind of live text at once; the markers bold1, bold2, code3 and "evil" name what the
#: data would make bold, code, a link or an image
HOSTILE = (
    "[x](https://evil.example/md) https://evil.example/a www.evil.example/w "
    "mail@evil.example <b>bold1</b> **bold2** `code3` javascript:alert(1) "
    "![img](https://evil.example/i.png) <https://evil.example/angle> [j](javascript:alert(2))"
)
NAME = f"Hostile run {HOSTILE}"
#: the second also ends with a backslash, after quotes (Vega-Lite writes a chart's tooltips
#: and descriptions as expressions from its titles, without escaping one: the chart broke)
VARIANTS = [f"A {HOSTILE}", 'B <b>bold1</b> **bold2** `code3` www.evil.example/b "q" \\" \\']
PAGES = [
    "",
    "Dataset",
    "Distributions",
    "Embeddings",
    "Compare",
    "Runs",
    "Agreement",
    "Over_time",
    "Experiments",
]

#: what the page must not hold: a link to the data's addresses (or an anchor named by it), an
#: element the data made bold or code (its whole text a marker: the page's own bold may hold
#: data, as "**B is more relevant**"; a code block shows text as it is) or an image; plotly
#: draws <b> as a bold tspan and <a> as an SVG link
SCAN = """() => {
  const found = [];
  const docs = [document];
  for (const f of document.querySelectorAll('iframe')) {
    try { if (f.contentDocument) docs.push(f.contentDocument); } catch (e) {}
  }
  for (const doc of docs) {
    for (const a of doc.querySelectorAll('a')) {
      const href = a.getAttribute('href') || a.getAttribute('xlink:href') || '';
      if (/evil|javascript:/i.test(href)) found.push('link ' + href);
    }
    for (const el of doc.querySelectorAll('strong, b')) {
      if (/^bold[12]$/.test(el.textContent.trim())) found.push('bold ' + el.textContent);
    }
    for (const el of doc.querySelectorAll('tspan')) {
      const style = (el.getAttribute('style') || '').replace(/\\s/g, '');
      if (/font-weight:(bold|700)/.test(style) && /^bold[12]$/.test(el.textContent.trim())) {
        found.push('bold svg ' + el.textContent);
      }
    }
    for (const el of doc.querySelectorAll('code')) {
      if (el.closest('pre')) continue;
      if (/^code3$/.test(el.textContent.trim())) found.push('code ' + el.textContent);
    }
    for (const el of doc.querySelectorAll('img, image')) {
      const src = el.getAttribute('src') || el.getAttribute('href') || '';
      if (/evil/i.test(src) || el.getAttribute('alt') === 'img') found.push('image ' + src);
    }
  }
  return found;
}"""


def _hostile_run(store: RunStore) -> int:
    """24 rows (12 questions, each answered by two hostile variants) over three hours, with
    labels, a column of its own and a prompt version, scored with the fake backends."""
    rows = []
    for i in range(24):
        q = i // 2
        rows.append(
            {
                "id": f"q{q}",
                "variant": VARIANTS[i % 2],
                "user_input": f"Question {q}: what about {HOSTILE}?",
                "response": f"Answer {i}. {HOSTILE}. The end {i % 3}.",
                "team": f"team {i % 2} {HOSTILE}",
                "prompt_version": f"v{q // 6} {HOSTILE}",
                "start_time": (T0 + timedelta(minutes=8 * i)).isoformat(),
                "label": "good" if i % 3 else "bad",
            }
        )
    inputs = pd.DataFrame(rows)
    metric = AnswerRelevancy(
        llm=FakeGenerator(  # each answer its own questions: variants win and lose
            lambda response, n: [Generation(f"What about {HOSTILE} {response[:9]}?", False)] * n
        ),
        embeddings=FakeEmbedder({}),
        cache=False,
    )
    results = metric.score_many(inputs)
    run_id = store.create_run(NAME, {"backend": "embedded"}, inputs)
    store.append_results(run_id, list(enumerate(results)))
    return run_id


def _scan(page: Page, where: str) -> list[str]:
    """What :data:`SCAN` finds on the page, then in each help tooltip as it is hovered."""
    drawn = page.evaluate(SCAN)
    found = [f"{where}: {f}" for f in dict.fromkeys(drawn)]
    icons = page.get_by_test_id("stTooltipHoverTarget")
    for i in range(icons.count()):
        icon = icons.nth(i)
        if not icon.is_visible():
            continue
        page.mouse.move(0, 0)  # the last tooltip closes
        icon.evaluate("e => e.scrollIntoView({block: 'center'})")
        icon.hover(force=True, timeout=5000)
        page.wait_for_timeout(200)
        more = [f for f in dict.fromkeys(page.evaluate(SCAN)) if f not in drawn]
        found += [f"{where} (tooltip {i}): {f}" for f in more]
    page.mouse.move(0, 0)
    return found


def test_text_from_the_data_is_never_a_link_bold_code_or_image(
    page: Page, app_url: str, app_home: Path
):
    run_id = _hostile_run(RunStore(app_home / "runs.sqlite3"))
    found: list[str] = []
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)[:300]))
    for path in PAGES:
        open_page(page, app_url, f"{path}?run={run_id}")
        expect(page.get_by_role("combobox", name="Active run")).to_have_value(
            re.compile(rf"^#{run_id} · Hostile run"), timeout=60_000
        )
        found += _scan(page, path or "Home")
        if path in ("Distributions", "Compare", "Agreement", "Embeddings"):  # Vega-Lite charts
            charts = page.get_by_test_id("stVegaLiteChart")
            expect(charts.first.locator("canvas, svg.marks").first).to_be_visible()
            n = 2 if path == "Compare" else 1
            expect(charts.locator("canvas, svg.marks")).to_have_count(n)
        if path == "Embeddings":  # the variants' names in the map's legend, a question's tooltip
            page.locator('[data-testid="stButtonGroup"] button').filter(has_text="variant").click()
            settle(page)
            chart = page.get_by_test_id("stVegaLiteChart").first
            expect(chart.locator("canvas")).to_be_visible()
            _, _, tip = vega_point(page, chart, "generated question")
            assert "bold1" in tip and "www.evil.example" in tip  # shown as typed
            found += [f"Embeddings (point's tooltip): {f}" for f in page.evaluate(SCAN)]
            shot(page, "14-hostile-embeddings")
        if path == "Compare":  # variant names in cards, charts and regression titles
            shot(page, "14-hostile-compare")
    open_page(page, app_url, f"Dataset?run={run_id}&row=2")
    expect(page.get_by_role("combobox", name="Row to inspect")).to_be_visible(timeout=60_000)
    settle(page)
    found += _scan(page, "drill-down")
    shot(page, "14-hostile-drill-down")
    assert found == [], "\n".join(found)
    assert errors == [], errors  # no chart's script failed on the data's text
