"""A cache folder that cannot be written is one line from ``relevancy score`` that names the
folder and the fix, exit 2, nothing scored (before: a PermissionError traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relevancy.cli import main

from helpers import cli_backends, write_rows


def unwritable(tmp_path: Path, how: str) -> tuple[Path, str]:
    """A folder the cache cannot be made in, and what the system says of it."""
    if how == "not permitted":  # /sys refuses new folders even to root
        return Path("/sys/relevancy-cache"), "Operation not permitted"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    return blocker / "cache", "Not a directory"


@pytest.mark.parametrize("how", ["not permitted", "a file in the way"])
@pytest.mark.parametrize("given", ["env", "option"])
def test_an_unwritable_cache_is_one_line(tmp_path, capsys, monkeypatch, toy_server, how, given):
    folder, why = unwritable(tmp_path, how)
    src = write_rows(tmp_path / "rows.csv", [{"question": "What is x?", "answer": "X is y."}])
    argv = ["score", str(src), "-o", str(tmp_path / "out.csv"), *cli_backends(toy_server)]
    if given == "env":
        monkeypatch.setenv("RELEVANCY_CACHE_DIR", str(folder))
    else:
        argv += ["--cache-dir", str(folder)]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        f"error: the cache {folder / 'cache.sqlite3'} cannot be written ({why}): set "
        "$RELEVANCY_CACHE_DIR (or --cache-dir) to a folder you can write, or score with "
        "--no-cache"
    )
    assert not (tmp_path / "out.csv").exists()
    assert not [r for r in toy_server.requests if r["path"].endswith("/chat/completions")]
