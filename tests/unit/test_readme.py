"""The README stays a first screen, and no link in it or in docs/ points at nothing.

Issue 38 moved everything but the first screen (what lexplain is, the picture, the two
commands, a tour) into docs/. Nothing but a test keeps it that way: README.md had grown to 334
lines. A reviewer's eye was rejected as the guard, because it is what let it grow. A link is
checked against the files of the checkout: the file must exist, and a #fragment must name one of
its headings (GitHub's anchors). No network, so links to other sites are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
INDEX = "docs/README.md"
#: How long the README's first screen may be, up to and including the link to the index.
FIRST_SCREEN = 80
LINK = re.compile(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def links(text: str) -> list[str]:
    """Every link target of a Markdown text, code blocks left out."""
    return LINK.findall(FENCE.sub("", text))


def anchors(markdown: Path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings."""
    found = set()
    for heading in re.findall(r"^#+\s+(.*)$", FENCE.sub("", markdown.read_text()), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_the_readme_links_the_docs_index_within_its_first_80_lines_with_both_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    at = next((n for n, line in enumerate(lines, 1) if f"]({INDEX})" in line), None)
    assert at is not None, f"README.md never links {INDEX}"
    assert at <= FIRST_SCREEN, f"README.md first links {INDEX} on line {at}"
    first_screen = [line.strip() for line in lines[:at]]
    for command in ("scripts/run", "scripts/test"):
        assert command in first_screen, f"`{command}` is not on a line of its own before line {at}"


def resolves(markdown: Path, target: str) -> bool:
    """Whether a relative link of ``markdown`` names a file (and heading) of the checkout."""
    path, _, fragment = target.partition("#")
    file = (markdown.parent / path).resolve() if path else markdown
    if not file.exists():
        return False
    return not fragment or file.suffix != ".md" or fragment in anchors(file)


@pytest.mark.parametrize(
    "markdown", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_relative_link_names_a_file_and_heading_that_exist(markdown: Path) -> None:
    targets = [t for t in links(markdown.read_text(encoding="utf-8")) if not SCHEME.match(t)]
    broken = [target for target in targets if not resolves(markdown, target)]
    assert not broken, f"{markdown.relative_to(ROOT)} links {broken}, which do not exist"


def test_the_docs_index_links_every_page_of_docs() -> None:
    listed = {(DOCS / target).resolve() for target in links((DOCS / "README.md").read_text())}
    pages = {p.resolve() for p in DOCS.glob("*.md") if p.name != "README.md"}
    assert pages - listed == set(), f"docs/README.md does not link {sorted(pages - listed)}"
