"""tools.process_tree: a command stopped at its timeout takes its children with it."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from tools.process_tree import run_measured

#: A parent that starts a child sharing its output pipe, both sleeping past the timeout.
_PARENT = (
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']);"
    "print('started', flush=True); time.sleep(30)"
)


def test_a_command_stopped_at_its_timeout_takes_its_children_and_returns_at_once() -> None:
    # An upload's staging worker outlived its killed app and held the pipe: 823 s for 300.
    raised: list[BaseException] = []

    def run() -> None:
        try:
            run_measured([sys.executable, "-c", _PARENT], cwd=Path.cwd(), env={}, timeout=2)
        except BaseException as exc:
            raised.append(exc)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(15)
    assert not runner.is_alive(), "still waiting on the killed command's child"
    assert len(raised) == 1 and isinstance(raised[0], TimeoutError)
