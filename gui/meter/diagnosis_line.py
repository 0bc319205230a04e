"""The line under the stat cards that says why the last reply was as slow as it was: its top finding, and a toggle
that opens the whole ranked list, each finding with its evidence and what would change it."""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QGridLayout, QToolButton, QWidget

from core.diagnosis.diagnose import HEALTHY
from core.timing.finding import Finding
from gui.untrusted_text import plain_label, plain_tooltip

FOUND_COLOR = "#8a5300"  # amber: a cause, as the history plot marks the reply
HEALTHY_COLOR = "#188038"
STALE_COLOR = "#9a9a9a"  # the last reply's line, while the next one runs
STALE_TIP = "The last reply's diagnosis: this reply's comes when it ends."
HOW_TO_READ = (
    "Why this reply was as slow as it was: each finding names a cause, the measurement that shows it and what would "
    "change it, most costly first. Only what was measured is named (the prompt cache, the engine's CPU share, page "
    "faults and preemptions, garbage collections, the server's own timings, the roofline's ceilings)."
)


class DiagnosisLine(QWidget):
    """Hidden until a reply has been diagnosed; the list opens with the toggle (its state kept across replies). While the
    next reply runs, the last one's line stays, greyed (mark_stale)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.top = plain_label()
        self.top.setObjectName("diagnosis_top")
        self.top.setWordWrap(True)
        self.toggle = QToolButton()
        self.toggle.setObjectName("diagnosis_toggle")
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.toggled.connect(self._on_toggled)
        self.details = plain_label()
        self.details.setObjectName("diagnosis_details")
        self.details.setWordWrap(True)
        self.details.setVisible(False)
        layout.addWidget(self.top, 0, 0)
        layout.addWidget(self.toggle, 0, 1)
        layout.addWidget(self.details, 1, 0, 1, 2)
        layout.setColumnStretch(0, 1)
        self.findings: list[Finding] = []
        self.stale = False  # the line is the last reply's, and another reply is running
        self.setToolTip(HOW_TO_READ)
        self.setVisible(False)

    def show_findings(self, findings: list[Finding] | None) -> None:
        """A reply's diagnosis (None or []: nothing to say, the line hides)."""
        self.findings = list(findings or [])
        self.stale = False
        self.setVisible(bool(self.findings))
        if not self.findings:
            return
        first = self.findings[0]
        color = HEALTHY_COLOR if first.kind == HEALTHY else FOUND_COLOR
        self.top.setStyleSheet(f"color: {color};")
        more = len(self.findings) - 1
        self.top.setText(
            ("Why: " if first.kind != HEALTHY else "") + first.summary + (f" (+{more} more)" if more else "")
        )
        self.top.setToolTip(plain_tooltip(_details(first)))
        self.toggle.setText("▾ all findings" if self.toggle.isChecked() else "▸ why?")
        self.details.setText(
            "\n\n".join(f"{index}. {_details(finding)}" for index, finding in enumerate(self.findings, 1))
        )
        self.details.setVisible(self.toggle.isChecked())

    def clear(self) -> None:
        self.show_findings(None)

    def mark_stale(self) -> None:
        """A reply has started: the last one's line keeps its place, greyed, text unchanged. Hidden there, the plots
        below grew as each reply started and shrank as it ended: a jump the eye sees, and a re-layout and repaint of
        every plot that the window paid for while the model ran."""
        if not self.findings or self.stale:
            return
        self.stale = True
        self.top.setStyleSheet(f"color: {STALE_COLOR};")
        self.top.setToolTip(STALE_TIP)

    @Slot(bool)
    def _on_toggled(self, opened: bool) -> None:
        self.details.setVisible(opened and bool(self.findings))
        self.toggle.setText("▾ all findings" if opened else "▸ why?")


def _details(finding: Finding) -> str:
    lines = [finding.summary, f"Evidence: {finding.evidence}."]
    if finding.kind != HEALTHY:
        lines.insert(1, f"Cause: {finding.cause}.")
    if finding.advice:
        lines.append(f"What would change it: {finding.advice}.")
    return "\n".join(lines)
