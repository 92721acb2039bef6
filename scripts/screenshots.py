"""Take the README's dashboard screenshots again (``docs/*.jpg``) from a fresh install.

Starts ``streamlit run app.py`` on a free port with its own empty run store (so the precomputed
demo is imported, as on a first start), opens each page in headless Chromium (Debian's
``chromium``, as the browser tests do) and saves a 1000-px-wide JPEG of the whole page.

Usage::

    python scripts/screenshots.py            # writes docs/01-home.jpg ...
    python scripts/screenshots.py --out /tmp/shots
    python scripts/screenshots.py --only 07-dataset-stability-language.jpg
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

from relevancy.testing.browser import launch_args
from relevancy.testing.processes import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[1]
# file name -> (page path, text to wait for before the shot)
SHOTS = {
    "01-home.jpg": ("", "Mean score"),
    "02-dataset-results-drilldown.jpg": ("Dataset", "Noncommittal:"),
    "06-compare-demo.jpg": ("Compare", "Biggest regressions"),
    "04-embeddings.jpg": ("Embeddings", "PCA"),
    "07-dataset-stability-language.jpg": ("Dataset", "Noncommittal:"),
    # run 1: the demo scored through the test server, billed as gpt-4o-mini (see _priced_run)
    "05-runs-cost.jpg": ("Runs?run=1", "Tokens billed"),
    "07-agreement.jpg": ("Agreement", "Where the score and the label disagree"),
}
PRICED_RUN = "demo via the test server, billed as gpt-4o-mini"


def _priced_run(env: dict[str, str]) -> None:
    """Save a run with API token counts (run #1 of the fresh store) for the cost view: the demo
    scored by ``relevancy score`` against the toy OpenAI-compatible server under the model names
    of the default price table, so the Runs page shows its tokens and what they would cost."""
    import subprocess

    from relevancy.testing.openai_server import OpenAICompatServer

    with OpenAICompatServer() as srv:
        cmd = [
            str(Path(sys.executable).with_name("relevancy")),
            "score",
            "relevancy/data/demo.csv",
            "-o",
            str(Path(env["RELEVANCY_CACHE_DIR"]) / "priced.csv"),
            "-q",
            "--llm",
            "openai:gpt-4o-mini",
            "--embeddings",
            "openai:text-embedding-3-small",
            "--base-url",
            srv.base_url,
            "--save-run",
            PRICED_RUN,
        ]
        subprocess.run(cmd, env=dict(env, OPENAI_API_KEY="test"), cwd=ROOT, check=True)


def _stability_and_language(page) -> None:
    """A French demo row in the drill-down, re-scored 5 times: its band and its languages."""
    page.get_by_role("combobox", name="Row to inspect").click()
    page.keyboard.type("tour Eiffel")  # the list is virtual: filter it to the French rows
    page.get_by_role("option").filter(
        has_text="Quelle est la hauteur de la tour Eiffel"
    ).first.click()
    page.get_by_text("Languages: question in French").first.wait_for(timeout=120_000)
    page.get_by_text("re-score rows k times").first.click()
    page.get_by_role("button", name="Re-score 1 row(s) 5 times").click()
    page.get_by_text("Stability over 5 re-scorings").first.wait_for(timeout=300_000)


#: shots that need clicks first: name -> what to do on the page before the shot
PREPARE = {"07-dataset-stability-language.jpg": _stability_and_language}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs", help="folder for the JPEGs")
    p.add_argument("--width", type=int, default=1000, help="width of the JPEGs in pixels")
    p.add_argument("--png", action="store_true", help="also keep the full-size PNGs")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME", help="these shots only")
    args = p.parse_args()
    from PIL import Image
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="relevancy-shots-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(
        os.environ,
        RELEVANCY_STORE=str(home / "runs.sqlite3"),
        RELEVANCY_CACHE_DIR=str(home / "cache"),
    )
    env.pop("OPENAI_API_KEY", None)
    options = {
        "--server.headless": "true",
        "--server.port": str(port),
        "--server.address": "127.0.0.1",
        "--browser.gatherUsageStats": "false",
        "--server.fileWatcherType": "none",
    }
    server = ServerProcess(
        [sys.executable, "-m", "streamlit", "run", "app.py", *sum(options.items(), ())],
        url_to_poll=f"{url}/_stcore/health",
        env=env,
        cwd=ROOT,
        timeout=90,
        stop_timeout=20,
        name="streamlit",
    )
    if args.only is None or "05-runs-cost.jpg" in args.only:
        _priced_run(env)
    try:
        try:
            server.start()
        except RuntimeError as exc:
            raise SystemExit(f"streamlit did not become healthy: {exc}") from None
        with sync_playwright() as pw:
            browser = pw.chromium.launch(**launch_args())  # the tests' Chromium and flags
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for name, (path, wait_for) in SHOTS.items():
                if args.only and name not in args.only:
                    continue
                page.goto(f"{url}/{path}")
                page.get_by_text(wait_for).first.wait_for(timeout=120_000)
                if name in PREPARE:
                    PREPARE[name](page)
                page.wait_for_timeout(2500)  # charts finish drawing
                # Streamlit scrolls inside its main pane, not the document: grow the window to
                # the pane's height so one shot holds the whole page.
                height = page.evaluate(
                    "() => Math.max(...[...document.querySelectorAll("
                    "'[data-testid=stMain], [data-testid=stMainBlockContainer]')]"
                    ".map(e => e.scrollHeight), 600)"
                )
                page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 6000)})
                page.wait_for_timeout(1500)
                png = page.screenshot()
                page.set_viewport_size({"width": 1400, "height": 1000})
                if args.png:
                    (args.out / name).with_suffix(".png").write_bytes(png)
                image = Image.open(io.BytesIO(png)).convert("RGB")
                height = round(image.height * args.width / image.width)
                image = image.resize((args.width, height), Image.LANCZOS)
                image.save(args.out / name, "JPEG", quality=82, optimize=True)
                print(f"wrote {args.out / name} ({args.width}x{height})")
            browser.close()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
