"""The verdict under the two panes: one sentence, then both sides' numbers in a table, each judged by the budget."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from core.race.document import RaceRecord
from core.race.verdict import SideFacts, side_facts, span
from core.settings import READING_WPM
from core.timing.budget import budget_words, judge, tally_line
from gui.meter.budget_line import OVER_COLOR, WITHIN_COLOR
from gui.race.side_form import SIDE_COLORS

ROWS = (
    ("text appeared", "first_text_s", "When text first appeared after Send: TTFT when streaming, E2E when not."),
    ("finished", "finished_s", "When the last token arrived: E2E."),
    (
        "reader waited",
        "reader_wait_s",
        f"Time a {READING_WPM} wpm reader had read everything shown and waited for "
        "more, from the first text to the last.",
    ),
    ("TTFT", "ttft_s", "Time to first token, as vLLM defines it."),
    ("TPOT", "tpot_s", "(E2E − TTFT) / (N − 1)."),
    ("E2E", "e2e_s", "Send to the last token."),
)


class VerdictView(QWidget):
    """The sentence (and the budget's tally) on the left, the table of both sides' numbers on the right."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("race_verdict")
        self.words = QLabel()
        self.table = QLabel()
        for label in (self.words, self.table):
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.words.setWordWrap(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.words, stretch=3)
        layout.addWidget(self.table, stretch=2)
        self.sentence = ""
        self.show_note("Set A and B, then Run. The verdict appears here once both have run.")

    def text(self) -> str:
        return self.words.text() + self.table.text()

    def show_note(self, text: str) -> None:
        self.sentence = ""
        self.words.setText(f"<span style='color:#555; font-size:14px'>{html.escape(text)}</span>")
        self.table.setText("")
        self.setMinimumHeight(0)

    def show_record(self, record: RaceRecord, budget) -> None:
        """The verdict when there is one, else why not; the table of whatever ran, judged against budget."""
        facts = [
            side_facts(side.name, side.label, side.trace, side.streaming, budget) if side.trace else None
            for side in record.sides
        ]
        verdict = record.verdict
        self.sentence = verdict.sentence if verdict else ""
        if verdict:
            head = f"<p style='font-size:16px'><b>Verdict: {html.escape(verdict.sentence)}.</b></p>"
        else:
            head = f"<p style='font-size:15px; color:{OVER_COLOR}'><b>No verdict: {html.escape(record.status)}.</b></p>"
        marks = [judge(side.trace, side.streaming, budget) for side in record.sides if side.trace]
        foot = (
            f"<p style='color:#333'>Budget ({html.escape(budget_words(budget))}): <b>{tally_line(marks)}</b>. "
            f"Mode: {html.escape(record.mode)}.</p>"
        )
        self.words.setText(head + foot)
        self.table.setText(self._table(record, facts))
        # Room for the table's nine rows: word-wrapped labels do not claim their height themselves.
        self.setMinimumHeight(self.table.sizeHint().height() + 8)

    @staticmethod
    def _table(record: RaceRecord, facts: list[SideFacts | None]) -> str:
        cells = "".join(
            f"<th style='color:{SIDE_COLORS[side.name]}; padding:0 12px'>{side.name} ({html.escape(side.label)})</th>"
            for side in record.sides
        )
        rows = [f"<tr><th></th>{cells}</tr>"]
        for title, field, tooltip in ROWS:
            values = "".join(f"<td align='right' style='padding:0 12px'>{_value(fact, field)}</td>" for fact in facts)
            rows.append(f"<tr><td title='{html.escape(tooltip)}'>{title}</td>{values}</tr>")
        tokens = "".join(
            f"<td align='right' style='padding:0 12px'>{fact.output_tokens if fact else '—'}</td>" for fact in facts
        )
        rows.append(f"<tr><td>tokens</td>{tokens}</tr>")
        budget = "".join(f"<td align='right' style='padding:0 12px'>{_budget(fact)}</td>" for fact in facts)
        rows.append(f"<tr><td>budget</td>{budget}</tr>")
        return "<table cellspacing='0'>" + "".join(rows) + "</table>"


def _value(fact: SideFacts | None, field: str) -> str:
    if fact is None:
        return "not run"
    value = getattr(fact, field)
    if value is None:
        return "—"
    if field == "reader_wait_s" and not fact.streaming:
        return "— (all at once)"
    if field == "reader_wait_s" and value == 0:
        return "never"
    return span(value)


def _budget(fact: SideFacts | None) -> str:
    if fact is None or fact.within_budget is None:
        return "—"
    return (
        f"<b style='color:{WITHIN_COLOR}'>within</b>"
        if fact.within_budget
        else f"<b style='color:{OVER_COLOR}'>over</b>"
    )
