"""The latency budget that survives a restart, in the window's QSettings beside its other settings."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Signal

from core.errors import InvalidSettingsError
from core.settings import LatencyBudget
from gui.settings.store import open_settings

KEYS = {"ttft_s": "budget_ttft_s", "tpot_s": "budget_tpot_s"}


def load_budget(store: QSettings | None = None) -> LatencyBudget:
    """The saved budget; core's defaults for a value missing, hand-edited or out of range."""
    store = store or open_settings()
    defaults = LatencyBudget()
    values = {}
    for field, key in KEYS.items():
        try:
            values[field] = float(store.value(key, getattr(defaults, field)))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            values[field] = getattr(defaults, field)
    try:
        return LatencyBudget(**values)
    except InvalidSettingsError:
        return defaults


def save_budget(budget: LatencyBudget, store: QSettings | None = None) -> None:
    store = store or open_settings()
    for field, key in KEYS.items():
        store.setValue(key, getattr(budget, field))
    store.sync()


class BudgetKeeper(QObject):
    """The window's one budget: the chat's meter and the race window read it, either may change it."""

    changed = Signal(object)  # LatencyBudget

    def __init__(self, parent=None):
        super().__init__(parent)
        self.budget = load_budget()

    def set_budget(self, budget: LatencyBudget) -> None:
        if budget == self.budget:
            return
        self.budget = budget
        save_budget(budget)
        self.changed.emit(budget)
