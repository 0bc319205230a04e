"""core/ must never import Qt or pyqtgraph, and its folders keep their layers: import-linter and a clean interpreter."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # import-linter and a clean interpreter; `make check` runs lint-imports itself

ROOT = Path(__file__).resolve().parents[2]


def core_modules() -> list[str]:
    """Every module under core/, subfolders included (decode/, quant/, lab/ ...)."""
    names = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_import_linter_contracts_hold():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and "layered" in result.stdout


def test_importing_every_core_module_loads_no_qt():
    modules = core_modules()
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "forbidden = ('PySide6', 'pyqtgraph', 'shiboken6', 'gui', 'cli')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in forbidden)\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # The subfolders are really covered: a glob of core/*.py alone once missed decode/ and quant/.
    assert {"core.generation.decode.loop", "core.quant.int4_linear", "core.lab.runner"} <= set(modules)
