"""The terminal as a good citizen (issue 49 item 3): every refusal is one plain line with exit
status 2, a reader that goes away (``| head``) ends the command quietly with 141, and a limit
of 0 is refused by ``evaluate`` exactly as ``search`` and ``diagnose`` refuse it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from core.service import SAMPLE_QUERY_SET, LexplainService
from core.terminal.common import EXIT_PIPE_CLOSED, EXIT_UNUSABLE
from tests.unit.terminal.sample import QUERY, SAMPLE, run

#: Bytes read before the reader goes away, as ``head -c 400`` does.
READ_BEFORE_CLOSING = 400


def one_line(out: str) -> str:
    """The refusal printed, checked to be a single line with none of pydantic's dump."""
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    assert "validation error" not in out and "pydantic" not in out, out
    return lines[0]


@pytest.mark.postgres
def test_a_limit_of_zero_is_refused_in_the_same_sentence_by_search_evaluate_and_diagnose(
    facade: LexplainService,
) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    sentence = "the limit must be a whole number from 1 to 2^62, got 0"
    for argv in (
        ("search", QUERY),
        ("evaluate", "--set", SAMPLE_QUERY_SET),
        ("diagnose", "--set", SAMPLE_QUERY_SET),
    ):
        status, out = run(*argv, "--workspace", SAMPLE, "--limit", "0")
        assert status == EXIT_UNUSABLE, (argv, out)
        assert sentence in one_line(out), argv


@pytest.mark.postgres
def test_a_negative_limit_to_evaluate_is_one_plain_line_not_pydantics_dump(
    facade: LexplainService,
) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    status, out = run("evaluate", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "-1")
    assert status == EXIT_UNUSABLE
    assert one_line(out) == "error: the limit must be a whole number from 1 to 2^62, got -1"


@pytest.mark.postgres
@pytest.mark.parametrize(
    "argv",
    [
        ("evaluate", "--set", SAMPLE_QUERY_SET, "--json"),
        ("search", QUERY, "--k", "1000", "--explain", "--json"),
    ],
    ids=["evaluate", "search"],
)
def test_a_reader_that_stops_after_400_bytes_ends_the_command_quietly_with_141(
    facade: LexplainService, argv: tuple[str, ...]
) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    command = [sys.executable, "-m", "core", *argv, "--workspace", SAMPLE]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        head = process.stdout.read(READ_BEFORE_CLOSING)
        process.stdout.close()
        errors = process.stderr.read().decode()
        status = process.wait(timeout=120)
    assert len(head) == READ_BEFORE_CLOSING and head.startswith(b"{")
    assert errors == "", errors  # no BrokenPipeError traceback, no "Exception ignored"
    assert status == EXIT_PIPE_CLOSED
