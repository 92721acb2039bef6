"""``relevancy dashboard`` in a checkout: the command it runs serves the top-level app with the
dashboard's config as options (Streamlit reads config.toml only from the working folder), the
user's Streamlit options after them; a real server from another folder answers. The same command
from a pip-installed wheel is tested in tests/browser/test_pip_install.py.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

import pytest
import tomllib

from relevancy import cli
from relevancy.cli import dashboard
from relevancy.cli.dashboard import _simple_toml, app_dir, config_options, dashboard_command
from relevancy.testing.processes import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[1]


def test_in_a_checkout_the_top_level_app_is_served():
    assert app_dir() == ROOT
    cmd = dashboard_command(8600, ["--theme.base", "dark"])
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert cmd[-1] == str(ROOT / "app.py")
    options = cmd[4:-1]
    pairs = dict(zip(options[::2], options[1::2]))
    assert pairs["--runner.magicEnabled"] == "false"
    assert pairs["--client.showSidebarNavigation"] == "false"
    assert pairs["--server.port"] == "8600"
    # the user's option comes after the config's, so it wins
    assert options.index("--theme.base", options.index("--server.port")) > 0
    assert options[-2:] == ["--theme.base", "dark"]


def test_every_setting_of_config_toml_is_passed():
    text = (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")
    config = tomllib.loads(text)
    options = config_options(ROOT)
    assert len(options) == 2 * sum(len(v) for v in config.values())
    assert _simple_toml(text) == config  # the Python 3.10 reader agrees


def test_cli_passes_unknown_options_to_streamlit_only(monkeypatch):
    seen = []
    monkeypatch.setattr(
        dashboard, "run_dashboard", lambda port, options: seen.append((port, options)) or 0
    )
    assert cli.main(["dashboard", "--port", "8601", "--server.headless", "true"]) == 0
    assert cli.main(["dashboard"]) == 0
    assert seen == [(8601, ["--server.headless", "true"]), (None, [])]
    with pytest.raises(SystemExit) as exc:
        cli.main(["cache", "info", "--server.headless", "true"])
    assert exc.value.code == 2


def test_a_bad_port_is_one_line(capsys):
    assert cli.main(["dashboard", "--port", "70000"]) == 2
    assert capsys.readouterr().err == "error: --port must be from 1 to 65535, got 70000\n"


@pytest.mark.slow
def test_relevancy_dashboard_serves_from_another_folder(tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "relevancy.cli",
        "dashboard",
        "--port",
        str(port),
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
    ]
    server = ServerProcess(
        cmd,
        url_to_poll=f"http://127.0.0.1:{port}/_stcore/health",
        expect=b"ok",
        env=env,
        cwd=tmp_path,
        log_path=tmp_path / "log.txt",
        timeout=90,
    )
    with server, urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
        assert resp.status == 200
        pid = server.pid  # the command became Streamlit: stopping it leaves no orphan behind
        assert b"streamlit\x00run" in Path(f"/proc/{pid}/cmdline").read_bytes()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert (tmp_path / "log.txt").read_text().startswith(f"dashboard: {ROOT / 'app.py'}\n")
