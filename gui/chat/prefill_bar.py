"""The prompt's pass while it runs: a progress bar with % and an ETA, in place of the reply's first text."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar

from core.timing.prefill_eta import describe_prefill, prefill_eta_s

STEPS = 1000


class PrefillBar(QProgressBar):
    """Shown from the first progress report to the first token (or the reply's end); set once per frame."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("prefill_bar")
        self.setRange(0, STEPS)
        self.setTextVisible(True)
        self.setToolTip(
            "The prompt's forward pass (prefill), decoder layer by decoder layer. It ends at 100% just "
            "before the first token is sampled; the ETA assumes the remaining layers take as long as "
            "the ones done. TTFT = first token's stamp − request start (vLLM's definition)."
        )
        self.setVisible(False)

    def show_progress(self, progress: list[tuple[int, float]], now_ns: int) -> None:
        """progress is the trace's (stamp_ns, fraction) list; the ETA counts down from the latest layer."""
        if not progress:
            return
        started_ns, _ = progress[0]
        latest_ns, fraction = progress[-1]
        eta_s = prefill_eta_s(started_ns, latest_ns, fraction)
        if eta_s is not None:
            eta_s = max(0.0, eta_s - (now_ns - latest_ns) / 1e9)
        self.setValue(round(fraction * STEPS))
        self.setFormat(describe_prefill(fraction, eta_s))
        self.setVisible(True)

    def fraction_shown(self) -> float:
        return self.value() / STEPS
