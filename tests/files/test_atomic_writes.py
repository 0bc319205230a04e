"""Every file the app writes is written atomically: a full disk leaves the file that was there, never a part of the
new one. The disk fills for real, at the system call: a child process whose file size limit (RLIMIT_FSIZE) the new
file passes, as a disk with that much room left would."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOM = 64 * 1024  # bytes "left on the disk"
BIG = 4 * ROOM
SETUP = f"""
import resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails with EFBIG instead of a signal
path = Path(sys.argv[1])
BIG = {BIG}
"""
# writer: code that writes `path` with more than ROOM bytes (after the limit is set by LIMIT).
WRITERS = {
    "trace export (JSON or CSV)": """
from core.timing.export import write_text_file
LIMIT()
write_text_file(path, "x" * BIG)
""",
    "lab results as JSON": """
from core.lab.results import LabResults, save_results_json
results = LabResults(config={"note": "x" * BIG})
LIMIT()
save_results_json(results, path)
""",
    "lab results as CSV": """
from core.lab.results import LabResults, save_results_csv
results = LabResults(config={}, prompt=[{"prompt_words": n, "note": "x" * 200} for n in range(BIG // 100)])
LIMIT()
save_results_csv(results, path)
""",
    "chat export": """
from core.chats.record import ChatRecord
from core.chats.session import Message
from core.chats.store import ChatStore
record = ChatRecord.new("big")
record.messages = [Message("user", "x" * BIG)]
LIMIT()
ChatStore(path.parent / "chats").export_chat(record, path)
""",
    "plots as PNG": """
import os
os.environ["QT_QPA_PLATFORM"] = "offscreen"
import numpy as np
from PySide6.QtGui import QGuiApplication, QImage, QPixmap
app = QGuiApplication([])
noise = np.random.default_rng(0).integers(0, 256, (512, 512, 4), dtype=np.uint8)
image = QImage(noise.data, 512, 512, 512 * 4, QImage.Format.Format_RGBA8888)
from gui.png_file import save_png
pixmap = QPixmap.fromImage(image)
LIMIT()
save_png(pixmap, path)
""",
    "a benchmark's --json": """
import json
from core.atomic_file import atomic_write_text
LIMIT()
atomic_write_text(path, json.dumps({"printed": ["x" * BIG]}))  # benchmarks/_common.py's Report.write
""",
}
LIMIT = f"""
def LIMIT():
    resource.setrlimit(resource.RLIMIT_FSIZE, ({ROOM}, {ROOM}))
"""


def write_on_a_full_disk(name: str, target: Path) -> subprocess.CompletedProcess:
    script = SETUP + LIMIT + textwrap.dedent(WRITERS[name])
    return subprocess.run(
        [sys.executable, "-c", script, str(target)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.subprocess  # the full disk is a child process's file-size limit
@pytest.mark.parametrize("name", list(WRITERS))
def test_a_full_disk_leaves_the_previous_file_whole(tmp_path, name):
    target = tmp_path / "export.out"
    target.write_text("the previous export\n")
    result = write_on_a_full_disk(name, target)
    assert result.returncode != 0 and "File too large" in result.stderr, result.stderr[-2000:]
    assert target.read_text() == "the previous export\n"  # not destroyed, not half-written
    assert sorted(path.name for path in tmp_path.iterdir() if not path.is_dir()) == ["export.out"]  # no part left


@pytest.mark.subprocess
@pytest.mark.parametrize("name", list(WRITERS))
def test_with_room_on_the_disk_the_new_file_replaces_the_old(tmp_path, name):
    target = tmp_path / "export.out"
    target.write_text("the previous export\n")
    script = SETUP + "def LIMIT():\n    pass\n" + textwrap.dedent(WRITERS[name])
    result = subprocess.run(
        [sys.executable, "-c", script, str(target)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert target.stat().st_size > ROOM
