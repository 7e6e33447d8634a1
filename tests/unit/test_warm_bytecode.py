"""scripts/warm_bytecode.py: the install writes the bytecode the first page would have compiled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import warm_bytecode  # noqa: E402


def test_no_screen_script_or_main_module_is_imported_while_warming() -> None:
    names = warm_bytecode.modules_to_import()
    scripts = warm_bytecode.page_scripts()
    assert {"pages.search", "pages.runs", "pages.upload"} <= scripts
    assert not scripts & set(names)
    assert not [name for name in names if name.endswith("__main__")]


def test_what_the_screens_import_is_warmed_without_a_list() -> None:
    names = set(warm_bytecode.modules_to_import())
    # plotly.graph_objects: pages/common.py; the project's own modules; a page helper module.
    assert {"plotly.graph_objects", "streamlit", "core.service.facade", "pages.common"} <= names
    assert {"pandas", "pyarrow", "streamlit.web.bootstrap"} <= names


def test_warming_writes_the_bytecode_of_each_module_it_imports_and_each_package_it_compiles(
    tmp_path: Path,
) -> None:
    # Bytecode goes under a fresh prefix, so nothing written before this test counts.
    code = (
        "import sys; sys.path.insert(0, 'scripts'); import warm_bytecode as w; "
        "print(w.warm(whole=('h11',), modules=['core.domain.bm25', 'no_such_module_here']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        # PYTHONDONTWRITEBYTECODE set (as in some shells and images): warming writes anyway.
        env={**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "['no_such_module_here']" in done.stdout
    written = {path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*.pyc")}
    imported = f"{ROOT.as_posix()[1:]}/core/domain/bm25.cpython-"
    assert any(path.startswith(imported) for path in written)
    # h11 is compiled whole, though nothing imported it.
    assert {"_readers", "_writers", "_state"} <= {
        path.rsplit("/", 1)[1].split(".")[0] for path in written if "/h11/" in path
    }


def test_each_install_warms_the_bytecode() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    install = setup[setup.index("venv_install() {") :]
    assert install.index("uv pip install") < install.index("scripts/warm_bytecode.py")
    assert install.index("scripts/warm_bytecode.py") < install.index('>"$stamp"')
