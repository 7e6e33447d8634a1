"""The bundled data's READMEs name only files the repository has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("readme", sorted((ROOT / "data").rglob("README.md")), ids=str)
def test_every_path_a_data_readme_lists_exists(readme: Path) -> None:
    text = readme.read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([^`]+)` \|", text, flags=re.M)
    listed += re.findall(r"see `([^`]+/[^`]*)`", text)
    missing = [name for name in listed if not (readme.parent / name).exists()]
    assert not missing, f"{readme.relative_to(ROOT)} lists {missing}, which do not exist"
