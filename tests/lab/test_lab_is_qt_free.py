"""core.lab must import no Qt either: the top-level check globs only core/*.py, so the lab's modules get their own."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_every_lab_module_loads_no_qt():
    modules = sorted(f"core.lab.{path.stem}" for path in (ROOT / "core" / "lab").glob("*.py")
                     if path.stem != "__init__")
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "forbidden = ('PySide6', 'pyqtgraph', 'shiboken6', 'gui', 'cli')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in forbidden)\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(modules) >= 9
