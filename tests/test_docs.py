"""The README and docs/ hold together: a two-command quick start (the second is what CI runs),
every docs page reachable from the README, and every relative link pointing at a file that
exists and, with an anchor, at a heading that exists (GitHub's anchor rules)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(<?([^)\s>]+)>?(?:[ \t]+\"[^\"]*\")?\)")


def _prose(text: str) -> str:
    """The page without its fenced code blocks (a ``#`` comment there is not a heading)."""
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation out, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link reads as its text
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (repeated headings get -1, -2... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_prose(path.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    """The relative link and image targets of a Markdown file, outside code blocks."""
    found = _LINK.findall(_prose(path.read_text(encoding="utf-8")))
    return [t for t in found if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.I)]


def _quick_start_commands() -> list[str]:
    section = README.read_text(encoding="utf-8").split("\n## Quick start\n", 1)
    assert len(section) == 2, "README.md has a '## Quick start' section"
    block = re.search(r"```(?:bash|sh|console)?\n(.*?)```", section[1].split("\n## ", 1)[0], re.S)
    assert block, "the quick start has a code block"
    lines = [line.split(" #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_quick_start_is_two_commands_and_the_second_is_what_ci_runs():
    commands = _quick_start_commands()
    assert commands == ["bash scripts/start.sh", "bash scripts/test.sh"]
    for command in commands:
        assert (ROOT / command.split()[1]).is_file()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci.splitlines()  # CI runs the README's test command


def test_every_docs_page_is_linked_from_the_readme():
    targets = {(README.parent / t.split("#")[0]).resolve() for t in links(README)}
    missing = [p.name for p in PAGES[1:] if p.resolve() not in targets]
    assert not missing, f"README.md does not link {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_and_headings_that_exist(page: Path):
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix != ".md":
            broken.append(f"{target}: an anchor into a file that is not Markdown")
        elif anchor and anchor not in anchors(dest):
            broken.append(f"{target}: no heading '#{anchor}' in {dest.relative_to(ROOT)}")
    assert not broken, broken


def test_anchors_follow_github():
    assert slug("2b. Against Ragas on a remote API") == "2b-against-ragas-on-a-remote-api"
    assert slug("What the default is, and why (the rule)") == "what-the-default-is-and-why-the-rule"
    assert slug("The `relevancy` CLI: [docs](x.md) **now**") == "the-relevancy-cli-docs-now"
    assert slug("Re-score k times?") == "re-score-k-times"


def test_the_link_checker_catches_a_broken_link_and_a_broken_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Two words\n\n[ok](#two-words) [bad](#three-words) [gone](missing.md)\n"
        "```bash\n# not a heading\n[not a link](nowhere.md)\n```\n[web](https://example.com)\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"title", "two-words"}
    assert links(page) == ["#two-words", "#three-words", "missing.md"]
