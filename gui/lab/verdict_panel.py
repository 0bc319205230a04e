"""The chapter's claims beside the plots, each with its verdict and the numbers behind it."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.lab.roofline_verdict import CLAIM_ROOFLINE
from core.lab.verdicts import (
    CLAIM_BATCH,
    CLAIM_HISTORY,
    CLAIM_PRECISION,
    CLAIM_PROMPT,
    CLAIM_SIZE,
    CLAIM_SPECULATION,
    CLAIM_TOTAL,
)

CLAIMS = (
    ("prompt", CLAIM_PROMPT),
    ("precision", CLAIM_PRECISION),
    ("batch", CLAIM_BATCH),
    ("total", CLAIM_TOTAL),
    ("history", CLAIM_HISTORY),
    ("roofline", CLAIM_ROOFLINE),
)
# The sweeps asked for by name: their claims are shown only where a run judged them.
OPTIONAL_CLAIMS = (("speculation", CLAIM_SPECULATION), ("size", CLAIM_SIZE))
VERDICT_STYLE = {
    True: ("Holds", "#188038"),
    False: ("Does not hold", "#d93025"),
    None: ("Not tested", "#777777"),
}


class VerdictPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        title = QLabel("<b>The chapter's claims on this machine</b>")
        layout.addWidget(title)
        self.labels: dict[str, QLabel] = {}
        for key, _claim in (*CLAIMS, *OPTIONAL_CLAIMS):
            label = QLabel()
            label.setObjectName(f"verdict_{key}")
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setMargin(4)
            layout.addWidget(label)
            self.labels[key] = label
        layout.addStretch(1)
        self.clear()

    def clear(self) -> None:
        for key, claim in CLAIMS:
            self._show(key, claim, None, "run the lab to test it")
            self.labels[key].setToolTip("")
        for key, _claim in OPTIONAL_CLAIMS:
            self.labels[key].setVisible(False)

    def show_verdicts(self, verdicts: list[dict]) -> None:
        self.clear()
        for verdict in verdicts:
            key = verdict.get("key")
            if key in self.labels:
                self._show(key, verdict.get("claim", ""), verdict.get("holds"), verdict.get("evidence", ""))
                self.labels[key].setToolTip("Judged by: " + verdict.get("criterion", ""))
                self.labels[key].setVisible(True)

    def verdict_text(self, key: str) -> str:
        return self.labels[key].text()

    def _show(self, key: str, claim: str, holds: bool | None, evidence: str) -> None:
        word, color = VERDICT_STYLE[holds]
        self.labels[key].setText(
            f"<p><b>{escape(claim)}</b><br>{escape(evidence)}.<br>"
            f"<span style='color:{color}; font-weight:700'>{word}.</span></p>"
        )
