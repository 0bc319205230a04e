"""The reply-length and sampling fields (max new tokens, temperature, top-p, seed), ranged by core's schema."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QDoubleSpinBox, QSpinBox

from core.settings import MAX_NEW_TOKENS, TEMPERATURE, TOP_P
from gui.settings.seed_box import SeedBox


@dataclass
class SamplingFields:
    max_new_tokens: QSpinBox
    temperature: QDoubleSpinBox
    top_p: QDoubleSpinBox
    seed: SeedBox


def sampling_fields() -> SamplingFields:
    """Every range comes from core's schema, so a form accepts exactly what core accepts."""
    max_new_tokens = QSpinBox()
    max_new_tokens.setRange(int(MAX_NEW_TOKENS.low), int(MAX_NEW_TOKENS.high))
    temperature = QDoubleSpinBox()
    temperature.setRange(TEMPERATURE.low, TEMPERATURE.high)
    temperature.setSingleStep(0.1)
    temperature.setToolTip("0 = greedy decoding (deterministic)")
    top_p = QDoubleSpinBox()
    top_p.setRange(0.01, TOP_P.high)  # the spin box's smallest step above core's open bound of 0
    top_p.setSingleStep(0.05)
    return SamplingFields(max_new_tokens, temperature, top_p, SeedBox())
