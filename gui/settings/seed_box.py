"""A seed field for the whole range core allows (0 to 2**32 - 1), empty for a random seed; a QSpinBox stops at 2**31 - 1."""

from __future__ import annotations

from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QLineEdit

from core.settings import SEED


class _SeedValidator(QValidator):
    def validate(self, text: str, position: int):
        if text == "":
            return QValidator.State.Acceptable, text, position
        if not text.isdigit():
            return QValidator.State.Invalid, text, position
        return (QValidator.State.Acceptable if int(text) <= SEED.high else QValidator.State.Invalid), text, position


class SeedBox(QLineEdit):
    """value() is None (random) or a whole number inside core's SEED range."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setPlaceholderText("random")
        self.setValidator(_SeedValidator(self))
        self.setMaximumWidth(110)
        self.setToolTip(
            f"Fixed seed for sampling, {int(SEED.low)} to {int(SEED.high):,}; empty for a random one. "
            "Greedy decoding (temperature 0) does not use it."
        )

    def value(self) -> int | None:
        text = self.text().strip()
        return int(text) if text else None

    def setValue(self, seed: int | None) -> None:  # noqa: N802 - the spin boxes' name, so callers treat all alike
        self.setText("" if seed is None else str(seed))
