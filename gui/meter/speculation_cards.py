"""The speculation row of the cards: drafted, accepted, acceptance rate, tokens per verify pass and the speed-up, from
the reply's SpeculationReport; or why speculation asked for did not run."""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QWidget

from core.timing.events import SpeculationReport
from gui.meter.interval_plot import DRAFT_COLOR
from gui.meter.stat_cards import CardSpec, StatCard
from gui.untrusted_text import plain_label

DRAFTED_TOOLTIP = (
    "Draft tokens the model checked. Prompt lookup (ngram) drafts the tokens that followed the last few tokens where "
    "they appeared before, in the prompt or the reply so far; a draft model, a smaller model of the same "
    "vocabulary, drafts token by token. The model checks a step's drafts in one pass, which reads the weights once, "
    "as one decode step does."
)
ACCEPTED_TOOLTIP = (
    "Drafts the model agreed with, the longest agreeing run of each pass: tokens that cost no decode step of their "
    "own. They are the purple x's on the interval plot, and the words View → Tint accepted draft tokens marks in the "
    "transcript. The reply is the same token for token as without speculation (greedy)."
)
ACCEPTANCE_TOOLTIP = "accepted / drafted: how often the drafts were right."
PER_PASS_TOOLTIP = (
    "(accepted + passes) / passes: a verify pass gives its accepted drafts and one token of the model's own, chosen "
    "from the same pass's output. 1.00 means no draft was kept; with k drafts a step, k + 1 is the most. Only verify "
    "passes count: a step with nothing to draft is an ordinary decode step (1 token a pass), and a reply's last pass "
    "may end it (end of text, max new tokens) before its own token is used."
)
SPECULATION_CARDS = (
    CardSpec("drafted", "drafted (prompt lookup)", "", DRAFTED_TOOLTIP),
    CardSpec("accepted", "accepted drafts", "", ACCEPTED_TOOLTIP),
    CardSpec("acceptance", "acceptance rate", "%", ACCEPTANCE_TOOLTIP),
    CardSpec("per_pass", "tokens per verify pass", "per pass", PER_PASS_TOOLTIP),
)
SPEEDUP_TOOLTIP = (
    "What speculation did for decode in this reply, weighed by the reply's own ordinary decode steps (steps with "
    "nothing to draft): its verify passes and steps took what they took; at the ordinary step's time, the tokens the "
    "passes gave would have taken one step each. Above 1: the drafts paid for their verify passes."
)
METHOD_NAMES = {"ngram": "prompt lookup", "draft": "draft model", "server": "by the server"}


def tokens_per_pass(report: SpeculationReport) -> float | None:
    """Tokens a verify pass gave: its accepted drafts and the model's own token after them; None with no pass, or
    none reported."""
    return (report.accepted + report.passes) / report.passes if report.passes else None


def speedup_text(report: SpeculationReport) -> str:
    """One line: the TPOT speed-up against the reply's own ordinary steps, and the time it saved or cost."""
    speedup, saved = report.speedup, report.saved_s
    if speedup is None or saved is None:
        if report.method == "server":
            return "TPOT speed-up: not reported (the server's steps are its own)"
        return "TPOT speed-up: not measured (it needs two ordinary decode steps in the reply to weigh the passes by)"
    change = f"saved {saved * 1000:,.0f} ms" if saved >= 0 else f"cost {-saved * 1000:,.0f} ms"
    return f"TPOT speed-up {speedup:.2f}× against this reply's own decode steps ({change})"


class SpeculationCards(QWidget):
    """A row of four cards and a line of speed-up under the others, shown after a reply that speculated; while the next reply streams it
    keeps its place (its values cleared), so the plots below are not re-laid out mid-reply. Where speculation was
    asked for and could not run, one line says why instead."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.cards = {spec.key: StatCard(spec) for spec in SPECULATION_CARDS}
        for column, card in enumerate(self.cards.values()):
            card.set_title(card.spec.title, DRAFT_COLOR)  # the drafts' colour on the plot
            layout.addWidget(card, 0, column)
        # What the drafts did for decode, under the cards; kept (emptied) while the next reply streams, so the plots
        # below keep their place.
        self.speedup = plain_label()
        self.speedup.setObjectName("speculation_speedup")
        self.speedup.setToolTip(SPEEDUP_TOOLTIP)
        layout.addWidget(self.speedup, 1, 0, 1, len(self.cards))
        self.note = plain_label()
        self.note.setObjectName("speculation_note")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #8a5300;")
        layout.addWidget(self.note, 2, 0, 1, len(self.cards))
        self.report: SpeculationReport | None = None
        self.setVisible(False)
        self.note.setVisible(False)

    def clear(self) -> None:
        """A new reply: the values go, the row stays where it was until the reply says."""
        for card in self.cards.values():
            card.set_value(None)
        self.speedup.setText("TPOT speed-up: –")

    def show_report(self, report: SpeculationReport | None, output_tokens: int) -> None:
        """The finished reply's report; None (no speculation asked for) hides the row."""
        self.report = report
        self.setVisible(report is not None)
        if report is None:
            return
        # A refusal is a report of no pass with a note saying why; a server's counts carry a note too (where they
        # came from), with its passes unknown (None), not none.
        refused = report.note is not None and report.passes == 0
        self.note.setVisible(refused)
        self.note.setText(f"Speculation asked for, not run: {report.note}." if refused else "")
        self.speedup.setVisible(not refused)
        self.speedup.setText(speedup_text(report))
        for card in self.cards.values():
            card.setVisible(not refused)
        if refused:
            return
        values = {
            "drafted": report.drafted,
            "accepted": report.accepted,
            "acceptance": report.acceptance,
            "per_pass": tokens_per_pass(report),
        }
        for key, value in values.items():
            self.cards[key].set_value(value)
        drafted = self.cards["drafted"]
        drafted.set_title(f"drafted ({METHOD_NAMES.get(report.method, report.method)})", DRAFT_COLOR)
        drafted.setToolTip(drafted.spec.tooltip + (f"\nThis reply: {report.note}." if report.note else ""))
        per_pass = self.cards["per_pass"]
        if report.passes is None:
            per_pass.set_text("not reported")
            per_pass.setToolTip(per_pass.spec.tooltip + "\nThis reply: the server did not say how many passes it made.")
            return
        own = output_tokens - report.accepted
        per_pass.setToolTip(
            per_pass.spec.tooltip
            + f"\nThis reply: {report.passes:,} verify passes. Counting every pass of the model (the prompt's, "
            f"decode steps and verify passes), its {output_tokens:,} tokens took {own:,}: "
            + (f"{output_tokens / own:.2f} tokens a pass." if own > 0 else "no pass of its own.")
        )
