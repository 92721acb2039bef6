"""Build hook: the wheel carries the dashboard's files (``app.py``, ``pages/*.py``,
``.streamlit/config.toml``) in ``relevancy/_app/``, copied at build time from the top-level
ones, so ``relevancy dashboard`` serves the same app after a ``pip install`` and no copy lives
in the repository. Everything else is in pyproject.toml. An editable install copies nothing:
``relevancy dashboard`` then serves the checkout's own files (``relevancy/cli/dashboard.py``).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
APP_FILES = (
    "app.py",
    "pages/*.py",
    ".streamlit/config.toml",
)  # as relevancy.cli.dashboard.APP_FILES


class BuildWithDashboard(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        folder = Path(self.build_lib, "relevancy", "_app")
        shutil.rmtree(folder, ignore_errors=True)  # no page left over from an earlier build
        for pattern in APP_FILES:
            for source in sorted(ROOT.glob(pattern)):
                target = folder / source.relative_to(ROOT)
                self.mkpath(str(target.parent))
                self.copy_file(str(source), str(target))


setup(cmdclass={"build_py": BuildWithDashboard})
