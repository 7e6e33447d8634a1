"""The Citus source the suite builds is in the repository, and is checked before it is built.

A clone with nothing beside it must pass scripts/test (issue 38): the tarball and its patch live in
vendor/, and scripts/citus.sh refuses a file whose SHA-256 is not the one vendor/README.md names,
before it unpacks anything. Calling the shell function on a copy is what a build would do;
checking the sums in Python alone was rejected: it would not prove the script checks them.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "vendor"


def _script_sums() -> dict[str, str]:
    text = (ROOT / "scripts" / "citus.sh").read_text()
    return dict(re.findall(r"^(CITUS_\w+_SHA256)=([0-9a-f]{64})$", text, re.M))


def _build(vendor: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "source scripts/citus.sh && citus_build"],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "CITUS_VENDOR_DIR": str(vendor),
            "CITUS_CACHE_DIR": str(cache),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_vendored_files_have_the_sums_the_readme_and_the_script_name() -> None:
    readme = (VENDOR / "README.md").read_text()
    sums = _script_sums()
    tarball = hashlib.sha256((VENDOR / "citus-13.2.2.tar.gz").read_bytes()).hexdigest()
    patch = hashlib.sha256((VENDOR / "citus-13.2.2-pg15.20.patch").read_bytes()).hexdigest()
    assert sums == {"CITUS_TARBALL_SHA256": tarball, "CITUS_PATCH_SHA256": patch}
    assert tarball in readme and patch in readme and "AGPL-3.0" in readme


def test_a_tarball_that_differs_from_the_vendored_one_is_refused_before_it_is_unpacked(
    tmp_path: Path,
) -> None:
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    shutil.copy(VENDOR / "citus-13.2.2-pg15.20.patch", vendor)
    data = bytearray((VENDOR / "citus-13.2.2.tar.gz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (vendor / "citus-13.2.2.tar.gz").write_bytes(bytes(data))
    cache = tmp_path / "cache"
    done = _build(vendor, cache)
    assert done.returncode == 1
    assert "refusing to build" in done.stderr and "SHA-256" in done.stderr
    assert not cache.exists(), "nothing may be unpacked or cached for a refused tarball"


def test_a_missing_tarball_is_named_as_part_of_the_repository(tmp_path: Path) -> None:
    done = _build(tmp_path, tmp_path / "cache")
    assert done.returncode == 1
    assert "citus-13.2.2.tar.gz" in done.stderr and "vendor/" in done.stderr
