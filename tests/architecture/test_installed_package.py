"""A plain `pip install .` (not editable) works outside the checkout: every file the app reads is in the package."""

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # each test runs latencylab (or Python) in a child process

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.model
def test_a_non_editable_install_answers_outside_the_checkout(tmp_path):
    wheels = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("latencylab-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The new environment borrows this one's dependencies (torch, transformers, the embedded model) through a
    # path entry; a path entry's own .pth files are not run, so this checkout's editable hook stays out.
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--ignore-installed", str(wheel)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    where = subprocess.run(
        [str(python), "-c", "import core, sys; print(core.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(site)), where  # the installed copy, not the checkout
    result = subprocess.run(
        [str(venv / "bin" / "latencylab"), "ask", "Hi", "--max-new-tokens", "1", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output_tokens"] == 1
    agreement = subprocess.run(
        [str(python), "-c", "from core.quant.agreement import agreement_text; print(len(agreement_text()))"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert agreement.returncode == 0 and int(agreement.stdout) > 1000, agreement.stderr
