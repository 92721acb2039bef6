"""Where relevancy keeps its files: the cache and the run store (each overridable by an
environment variable). Nothing here creates a folder."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_cache_dir", "default_store_path", "as_store_file"]


def default_cache_dir() -> Path:
    """``$RELEVANCY_CACHE_DIR``, else the platform's user cache folder (``~/.cache/relevancy``)."""
    env = os.environ.get("RELEVANCY_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("relevancy", appauthor=False))


def default_store_path() -> Path:
    """``$RELEVANCY_STORE``, else ``runs.sqlite3`` in the user data folder."""
    env = os.environ.get("RELEVANCY_STORE")
    if env:
        return as_store_file(Path(env).expanduser())
    from platformdirs import user_data_dir

    return Path(user_data_dir("relevancy", appauthor=False)) / "runs.sqlite3"


def as_store_file(path: Path) -> Path:
    return path if path.suffix in {".sqlite", ".sqlite3", ".db"} else path / "runs.sqlite3"
