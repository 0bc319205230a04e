"""How long the prompt's pass has left, from the pace of the layers done so far."""

from __future__ import annotations


def prefill_eta_s(started_ns: int, now_ns: int, fraction: float) -> float | None:
    """Seconds left at the pace so far: the layers take about equal time on a prompt's pass.

    started_ns is the pass's 0% stamp; None until a layer is done (no pace to go by yet).
    """
    if fraction <= 0.0 or now_ns <= started_ns:
        return None
    return max(0.0, (now_ns - started_ns) / 1e9 * (1.0 - fraction) / fraction)


def describe_prefill(fraction: float, eta_s: float | None) -> str:
    """'Reading the prompt: 45% · about 1.2 s left', as the window's bar and the CLI's line show it."""
    left = f" · about {eta_s:.1f} s left" if eta_s is not None and fraction < 1.0 else ""
    return f"Reading the prompt: {fraction:.0%}{left}"
