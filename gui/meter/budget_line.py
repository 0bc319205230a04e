"""The chat's latency budget in one line under the stat cards ("7 of 9 replies within budget"), and its editor."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QHBoxLayout, QLabel, QWidget

from core.settings import READING_WPM, TPOT_BUDGET, TTFT_BUDGET, LatencyBudget
from core.timing.budget import DEFINITION, BudgetMark, budget_words

WITHIN_COLOR, OVER_COLOR = "#188038", "#b00020"


def mark_html(mark: BudgetMark | None) -> str:
    """A reply's mark as a coloured word and its reason, for labels."""
    if mark is None or mark.within is None:
        return "<span style='color:#555'>not judged</span>"
    color = WITHIN_COLOR if mark.within else OVER_COLOR
    word, _, rest = mark.line.partition(": ")
    return f"<b style='color:{color}'>{word}</b>: {rest}"


class BudgetLine(QLabel):
    """'Budget (text within 1.00 s, TPOT within 180 ms while streaming): 7 of 9 replies within budget. Change…'"""

    change_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("budget_line")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setToolTip(DEFINITION)
        self.linkActivated.connect(lambda _link: self.change_requested.emit())
        self.tally = ""

    def show_tally(self, budget: LatencyBudget, tally: str, last: BudgetMark | None) -> None:
        self.tally = tally
        last_part = f" Last reply: {mark_html(last)}." if last is not None else ""
        self.setText(f"<b>{tally}</b> ({budget_words(budget)}).{last_part} <a href='change'>Change…</a>")


class BudgetForm(QWidget):
    """The two budgets as spin boxes: the wait before text in seconds, the TPOT in milliseconds."""

    budget_changed = Signal(object)  # LatencyBudget

    def __init__(self, budget: LatencyBudget, parent=None):
        super().__init__(parent)
        self.ttft_box = QDoubleSpinBox()
        self.ttft_box.setRange(0.01, TTFT_BUDGET.high)
        self.ttft_box.setDecimals(2)
        self.ttft_box.setSingleStep(0.1)
        self.ttft_box.setSuffix(" s")
        self.ttft_box.setToolTip(
            "The longest wait before text appears that is within budget: TTFT when streaming, E2E when not."
        )
        self.tpot_box = QDoubleSpinBox()
        self.tpot_box.setRange(0.1, TPOT_BUDGET.high * 1000)
        self.tpot_box.setDecimals(1)
        self.tpot_box.setSingleStep(10)
        self.tpot_box.setSuffix(" ms")
        self.tpot_box.setToolTip(
            f"The slowest TPOT within budget while streaming; {TPOT_BUDGET.default * 1000:g} ms "
            f"keeps up with a reader at {READING_WPM} words a minute."
        )
        self.set_budget(budget)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for label, box in (("Budget: text within", self.ttft_box), ("TPOT within", self.tpot_box)):
            layout.addWidget(QLabel(label))
            layout.addWidget(box)
        self.ttft_box.valueChanged.connect(self._on_changed)
        self.tpot_box.valueChanged.connect(self._on_changed)

    def budget(self) -> LatencyBudget:
        return LatencyBudget(self.ttft_box.value(), self.tpot_box.value() / 1000)

    def set_budget(self, budget: LatencyBudget) -> None:
        for box, value in ((self.ttft_box, budget.ttft_s), (self.tpot_box, budget.tpot_s * 1000)):
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)

    @Slot()
    def _on_changed(self, *_) -> None:
        self.budget_changed.emit(self.budget())


class BudgetDialog(QDialog):
    def __init__(self, budget: LatencyBudget, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Latency budget")
        self.form = BudgetForm(budget)
        note = QLabel(DEFINITION)
        note.setWordWrap(True)
        note.setStyleSheet("color: #555;")
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Cancel
            | QDialogButtonBox.StandardButton.RestoreDefaults
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(
            lambda: self.form.set_budget(LatencyBudget())
        )
        layout = QFormLayout(self)
        layout.addRow(self.form)
        layout.addRow(note)
        layout.addRow(buttons)
