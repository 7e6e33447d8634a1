"""The lock files hold every requirement pyproject.toml names, at a version it allows.

scripts/run and scripts/test install only from the locks (hashes checked), so a dependency added to
pyproject.toml without `scripts/lock` would be missing from every fresh install while the shared
development venv, which has it, keeps the tests green. Reading the files is enough to catch that;
resolving again here was rejected (it needs the network and takes seconds).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
#: Each lock file and the extras of pyproject.toml it resolves, as scripts/lock writes them.
LOCKS = {
    "requirements.lock": (),
    "requirements-dev.lock": ("dev",),
    "bench/requirements.lock": ("dev", "bench"),
}
#: How uv marks a package that pyproject.toml asks for itself (not one pulled in by another).
DIRECT = "lexplain (pyproject.toml)"


@dataclass
class Locked:
    version: str
    hashes: int = 0
    direct: bool = False
    via: list[str] = field(default_factory=list)


def requirements(extras: tuple[str, ...]) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = list(project["dependencies"])
    for extra in extras:
        named += project["optional-dependencies"][extra]
    return [Requirement(line) for line in named]


def parse_lock(text: str) -> dict[str, Locked]:
    """Package name -> its pin, hash count and whether pyproject.toml asks for it directly."""
    locked: dict[str, Locked] = {}
    current: Locked | None = None
    for line in text.splitlines():
        pin = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if pin:
            current = locked[canonicalize_name(pin.group(1))] = Locked(pin.group(2))
        elif current is not None and line.strip().startswith("--hash="):
            current.hashes += 1
        elif current is not None and line.strip().startswith("#"):
            current.via.append(line.strip("# \n"))
    for entry in locked.values():
        entry.direct = any(DIRECT in via for via in entry.via)
    return locked


def lock(name: str) -> dict[str, Locked]:
    return parse_lock((ROOT / name).read_text())


@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_pins_every_requirement_of_its_set_at_a_version_pyproject_allows(name: str) -> None:
    locked = lock(name)
    wrong = []
    for requirement in requirements(LOCKS[name]):
        entry = locked.get(canonicalize_name(requirement.name))
        if entry is None or not requirement.specifier.contains(entry.version, prereleases=True):
            wrong.append(f"{requirement} (locked: {entry.version if entry else 'missing'})")
    assert not wrong, f"{name} is stale, run scripts/lock: {wrong}"


@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_asks_for_directly_only_what_pyproject_names(name: str) -> None:
    named = {canonicalize_name(r.name) for r in requirements(LOCKS[name])}
    direct = {package for package, entry in lock(name).items() if entry.direct}
    assert direct == named, f"{name} is stale, run scripts/lock"


@pytest.mark.parametrize("name", LOCKS)
def test_every_locked_package_carries_its_hashes(name: str) -> None:
    bare = [package for package, entry in lock(name).items() if entry.hashes == 0]
    assert not bare


def test_a_package_has_one_version_in_every_lock() -> None:
    # scripts/run and scripts/test share one .venv: two versions would reinstall on every switch.
    versions: dict[str, set[str]] = {}
    for name in LOCKS:
        for package, entry in lock(name).items():
            versions.setdefault(package, set()).add(entry.version)
    assert {package: v for package, v in versions.items() if len(v) > 1} == {}


def test_the_parser_reads_a_pin_its_hashes_and_who_asked_for_it() -> None:
    text = (
        "numpy==2.4.6 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n"
        "    # via\n    #   lexplain (pyproject.toml)\n    #   pandas\n"
        "tzdata==2025.2 \\\n    --hash=sha256:cc\n    # via pandas\n"
    )
    locked = parse_lock(text)
    assert (locked["numpy"].version, locked["numpy"].hashes, locked["numpy"].direct) == (
        "2.4.6",
        2,
        True,
    )
    assert (locked["tzdata"].hashes, locked["tzdata"].direct) == (1, False)
