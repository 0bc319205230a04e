"""The speculation fields: how drafts are made (off, or prompt lookup) and at most how many a step, by core's schema."""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QComboBox, QSpinBox

from core.settings import DRAFT_TOKENS, SPECULATION

# What each of core's choices is called in the form; a choice core adds later shows under its own name.
CHOICE_NAMES = {"off": "off", "ngram": "ngram (prompt lookup)"}


class SpeculationFields:
    """choice: a combo box whose items carry core's values; drafts: a spin box over core's DRAFT_TOKENS range,
    enabled only while speculation is on."""

    def __init__(self):
        self.choice = QComboBox()
        self.choice.setObjectName("speculation_box")
        for value in SPECULATION.choices:
            self.choice.addItem(CHOICE_NAMES.get(value, value), value)
        self.choice.setToolTip(
            "Speculative decoding. ngram (prompt lookup): the tokens that followed the last few tokens where they "
            "appeared before, in the prompt or the reply, are drafted, and the model checks them all in one pass, "
            "which reads the weights once, as a decode step does. Every draft it agrees with is a token that cost "
            "no step of its own; the reply is the same token for token. Greedy decoding (temperature 0), on the C "
            "kernels (a GGUF in native precision); it pays off where the reply copies its context."
        )
        self.drafts = QSpinBox()
        self.drafts.setObjectName("draft_tokens_box")
        self.drafts.setRange(int(DRAFT_TOKENS.low), int(DRAFT_TOKENS.high))
        self.drafts.setToolTip(
            f"At most this many drafts checked in one pass, {int(DRAFT_TOKENS.low)} to {int(DRAFT_TOKENS.high)}: "
            "more drafts gain more where the reply copies, and cost a longer pass where the model disagrees."
        )
        self.choice.currentIndexChanged.connect(self._enable_drafts)
        self.set_values(SPECULATION.default, int(DRAFT_TOKENS.default))

    def speculation(self) -> str:
        return self.choice.currentData()

    def draft_tokens(self) -> int:
        return self.drafts.value()

    def set_values(self, speculation: str, draft_tokens: int) -> None:
        """Values already checked against core's schema (an unknown choice shows the default)."""
        index = self.choice.findData(speculation)
        self.choice.setCurrentIndex(index if index >= 0 else self.choice.findData(SPECULATION.default))
        self.drafts.setValue(draft_tokens)
        self._enable_drafts()

    @Slot()
    def _enable_drafts(self) -> None:
        self.drafts.setEnabled(self.speculation() != "off")
