"""``relevancy dashboard``: serve the Streamlit dashboard, from a checkout or an installed wheel.

The dashboard is the repository's top-level ``app.py`` and ``pages/`` with its
``.streamlit/config.toml``. A wheel carries copies of those files in ``relevancy/_app/``, made
at build time from the top-level ones (``setup.py``), so there is one source and nothing to
keep in step; in a checkout (an editable install) the top-level files are used directly.

``streamlit run`` reads ``.streamlit/config.toml`` from the working folder only, so the
dashboard's settings (the theme, its own navigation, no "magic") are passed as command-line
options, before the user's own: ``relevancy dashboard --theme.base dark`` wins.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from relevancy.cli import add_command
from relevancy.errors import ConfigError

__all__ = [
    "app_dir",
    "config_options",
    "dashboard_command",
    "run_dashboard",
    "APP_FILES",
    "register",
]


def register(sub: Any) -> None:
    """Add this command's parser to ``sub``: ``relevancy dashboard [--port N] [options]``,
    where options Streamlit knows (``--server.headless true``...) are passed to it."""
    p = add_command(sub, "dashboard")
    p.add_argument("--port", type=int, default=None, help="port (default: Streamlit's, 8501)")
    p.set_defaults(func=cmd_dashboard, streamlit_options=[], passthrough=True)


def cmd_dashboard(args: Any) -> int:
    return run_dashboard(args.port, args.streamlit_options)


#: the dashboard's files, relative to the folder that holds app.py
APP_FILES = ("app.py", "pages/*.py", ".streamlit/config.toml")
_HERE = Path(__file__).resolve().parents[1]  # the relevancy package


def app_dir() -> Path:
    """The folder holding the dashboard's ``app.py``: the wheel's copy, else the checkout."""
    for folder in (_HERE / "_app", _HERE.parent):
        if (folder / "app.py").is_file() and (folder / "pages").is_dir():
            return folder
    raise ConfigError(
        "the dashboard's files are not installed with this copy of relevancy: install it from "
        "a wheel (pip install relevancy-*.whl) or run it from a checkout"
    )


def _simple_toml(text: str) -> dict[str, Any]:
    """Sections of ``key = value`` lines (strings, booleans, integers): enough for our
    ``config.toml`` where ``tomllib`` is missing (Python 3.10)."""
    data: dict[str, Any] = {}
    section: dict[str, Any] = data
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = re.fullmatch(r"\[([\w.]+)\]", line)
        if header:
            section = data.setdefault(header.group(1), {})
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if value.startswith('"'):
            section[key] = value[1 : value.index('"', 1)]
            continue
        value = value.split("#", 1)[0].strip()
        if value in ("true", "false"):
            section[key] = value == "true"
        else:
            section[key] = int(value) if value.lstrip("-").isdigit() else value
    return data


def _read_toml(text: str) -> dict[str, Any]:
    try:  # Python 3.11+
        import tomllib
    except ImportError:
        return _simple_toml(text)
    return tomllib.loads(text)


def config_options(folder: Path) -> list[str]:
    """``.streamlit/config.toml`` in ``folder`` as ``streamlit run`` options."""
    path = folder / ".streamlit" / "config.toml"
    if not path.is_file():
        return []
    out: list[str] = []
    for section, values in _read_toml(path.read_text(encoding="utf-8")).items():
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out += [f"--{section}.{key}", text]
    return out


def dashboard_command(
    port: int | None = None, options: list[str] | tuple[str, ...] = ()
) -> list[str]:
    """The ``streamlit run`` command line that serves the dashboard."""
    folder = app_dir()
    args = [*config_options(folder)]
    if port is not None:
        args += ["--server.port", str(port)]
    args += [o for o in options if o != "--"]
    return [sys.executable, "-m", "streamlit", "run", *args, str(folder / "app.py")]


def run_dashboard(port: int | None = None, options: list[str] | tuple[str, ...] = ()) -> int:
    """Serve the dashboard until it is stopped (Ctrl+C); the exit code of Streamlit."""
    if importlib.util.find_spec("streamlit") is None:
        raise ConfigError('the dashboard needs its extra: pip install "relevancy[dashboard]"')
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"--port must be from 1 to 65535, got {port}")
    cmd = dashboard_command(port, options)
    print(f"dashboard: {cmd[-1]}", file=sys.stderr, flush=True)
    if os.name == "posix":  # become Streamlit: signals (Ctrl+C, a supervisor's stop) reach it
        os.execv(cmd[0], cmd)
    proc = subprocess.Popen(cmd)
    try:
        return proc.wait()
    except KeyboardInterrupt:  # Streamlit got the Ctrl+C too and is stopping
        proc.wait()
        return 0
