"""The speculation fields: how drafts are made (off, prompt lookup, a draft model's file) and at most how many a step,
by core's schema."""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QComboBox, QFileDialog, QLineEdit, QPushButton, QSpinBox

from core.settings import DRAFT_TOKENS, SPECULATION

# What each of core's choices is called in the form; a choice core adds later shows under its own name.
CHOICE_NAMES = {"off": "off", "ngram": "prompt lookup", "draft": "draft model"}
DRAFT_MODEL_CHOICE = "draft"


class SpeculationFields:
    """choice: a combo box whose items carry core's values; drafts: a spin box over core's DRAFT_TOKENS range,
    enabled only while speculation is on; draft_model and its File… button: the drafting GGUF, shown only for a
    draft model."""

    def __init__(self):
        self.choice = QComboBox()
        self.choice.setObjectName("speculation_box")
        for value in SPECULATION.choices:
            self.choice.addItem(CHOICE_NAMES.get(value, value), value)
        self.choice.setToolTip(
            "Speculative decoding. ngram (prompt lookup): the tokens that followed the last few tokens where they "
            "appeared before, in the prompt or the reply, are drafted, and the model checks them all in one pass, "
            "which reads the weights once, as a decode step does. Every draft it agrees with is a token that cost "
            "no step of its own: a greedy reply is the same token for token, a sampled one keeps the model's "
            "distribution. A draft model: a smaller GGUF of the same vocabulary drafts instead. On the C kernels (a "
            "GGUF in native precision); prompt lookup pays off where the reply copies its context."
        )
        self.drafts = QSpinBox()
        self.drafts.setObjectName("draft_tokens_box")
        self.drafts.setRange(int(DRAFT_TOKENS.low), int(DRAFT_TOKENS.high))
        self.drafts.setToolTip(
            f"At most this many drafts checked in one pass, {int(DRAFT_TOKENS.low)} to {int(DRAFT_TOKENS.high)}: "
            "more drafts gain more where the reply copies, and cost a longer pass where the model disagrees."
        )
        self.draft_model_box = QLineEdit()
        self.draft_model_box.setObjectName("draft_model_box")
        self.draft_model_box.setPlaceholderText("draft model .gguf")
        self.draft_model_box.setToolTip(
            "A smaller GGUF with the model's vocabulary (the same family, or a lower quantisation of the same model): "
            "it drafts token by token, the model checks its drafts in one pass."
        )
        self.draft_model_button = QPushButton("File…")
        self.draft_model_button.clicked.connect(self._browse_draft_model)
        self.choice.currentIndexChanged.connect(self.show_choice)
        self.set_values(SPECULATION.default, int(DRAFT_TOKENS.default))

    def speculation(self) -> str:
        return self.choice.currentData()

    def draft_tokens(self) -> int:
        return self.drafts.value()

    def draft_model(self) -> str | None:
        """The draft model's file, with a draft model chosen; None otherwise (or none given)."""
        path = self.draft_model_box.text().strip()
        return path if path and self.speculation() == DRAFT_MODEL_CHOICE else None

    def set_values(self, speculation: str, draft_tokens: int, draft_model: str | None = None) -> None:
        """Values already checked against core's schema (an unknown choice shows the default); a draft model of
        None keeps the file named in the field."""
        index = self.choice.findData(speculation)
        self.choice.setCurrentIndex(index if index >= 0 else self.choice.findData(SPECULATION.default))
        self.drafts.setValue(draft_tokens)
        if draft_model is not None:
            self.draft_model_box.setText(draft_model)
        self.show_choice()

    @Slot()
    def show_choice(self) -> None:
        """The fields the choice uses: the drafts' count unless off, the file for a draft model (after the settings'
        row was shown again, which shows every widget in it)."""
        self.drafts.setEnabled(self.speculation() != "off")
        with_model = self.speculation() == DRAFT_MODEL_CHOICE
        self.draft_model_box.setVisible(with_model)
        self.draft_model_button.setVisible(with_model)

    @Slot()
    def _browse_draft_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.choice, "Choose a draft model", "", "GGUF files (*.gguf)")
        if path:
            self.draft_model_box.setText(path)
