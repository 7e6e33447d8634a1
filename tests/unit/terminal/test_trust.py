"""The terminal's trust, decided and said (issue 49 item 4): ``python -m core`` is an
operator's tool that trusts whoever holds the database URL or the data folder, like psql.

Held three ways: the first lines of docs/sign-in.md and docs/command-line.md say so (with what
an operator does to keep analysts off it); the terminal reads a workspace another person owns,
as said (a terminal that acted as a person would refuse it); and an unknown workspace name is
answered without naming any workspace, so a mistyped name shows nobody's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.service import LexplainService
from tests.unit.terminal.sample import QUERY, SAMPLE, run

ROOT = Path(__file__).resolve().parents[3]
#: Lines of each document that must say who the terminal trusts (its title and first paragraph).
FIRST_LINES = 12
#: What both documents must say there, in these words.
TRUST_WORDS = (
    "operator's tool",
    "trusts whoever holds the database URL or the data folder",
    "database URL or its password",
    "chmod 700",
)
#: Someone else's workspace, with a name that must never be printed for an unknown one.
PRIVATE = "Quarterly secrets of ada"


@pytest.mark.parametrize("doc", ["docs/sign-in.md", "docs/command-line.md"])
def test_the_docs_first_lines_say_the_terminal_trusts_whoever_holds_the_url_or_the_folder(
    doc: str,
) -> None:
    first = " ".join((ROOT / doc).read_text(encoding="utf-8").splitlines()[:FIRST_LINES])
    for words in TRUST_WORDS:
        assert words in first, f"{doc}'s first {FIRST_LINES} lines do not say {words!r}"


@pytest.mark.postgres
def test_the_terminal_reads_a_workspace_another_person_owns_as_the_docs_say(
    facade: LexplainService,
) -> None:
    status, out = run("owner", SAMPLE, "ada@example.org")
    assert status == 0, out
    status, out = run("search", QUERY, "--workspace", SAMPLE, "--k", "3", "--json")
    assert status == 0, out
    head, *passages = [json.loads(line) for line in out.splitlines()]
    assert head["workspace"] == SAMPLE and len(passages) == 3


@pytest.mark.postgres
def test_an_unknown_workspace_name_is_answered_without_naming_any_workspace(
    facade: LexplainService,
) -> None:
    facade.create_workspace(PRIVATE)
    assert {SAMPLE, PRIVATE} <= set(facade.list_workspaces())
    for argv in (("search", QUERY), ("evaluate", "--set", "any"), ("diagnose", "--set", "any")):
        status, out = run(*argv, "--workspace", "nowhere")
        assert status == 2, out
        assert out.strip() == (
            "error: there is no workspace 'nowhere' (names are not listed here: the app's "
            "sidebar shows a person theirs)"
        )
        assert PRIVATE not in out and repr(SAMPLE) not in out
