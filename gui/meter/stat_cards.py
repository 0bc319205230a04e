"""Stat cards showing the core's metrics for the current reply, each with its definition as a tooltip."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFont, QPainter
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QVBoxLayout, QWidget

from core.timing.cpu_share import DEFINITION as CPU_SHARE_DEFINITION
from core.timing.export import PROMPT_CACHE_DEFINITIONS
from core.timing.metrics import DEFINITIONS, LatencySummary


@dataclass(frozen=True)
class CardSpec:
    key: str
    title: str
    unit: str
    tooltip: str


PROMPT_TOOLTIP = (
    "The prompt's tokens, and how many of them the prompt cache gave (the chat's earlier turns, "
    "not computed again). " + PROMPT_CACHE_DEFINITIONS["prefilled_tokens"]
)
CARDS = (
    CardSpec("prompt", "prompt", "prompt", PROMPT_TOOLTIP),
    CardSpec("ttft", "TTFT", "ms", DEFINITIONS["ttft_s"] + " Counted from the moment you pressed Send."),
    CardSpec("tpot", "TPOT", "ms", DEFINITIONS["tpot_s"]),
    CardSpec("tok_s", "tok/s", "tok/s", DEFINITIONS["decode_tok_s"] + " The decode speed."),
    CardSpec("tokens", "tokens", "", "N: the number of generated tokens in this reply."),
    CardSpec("e2e", "E2E", "s", DEFINITIONS["e2e_s"]),
    CardSpec("prefill", "prefill tok/s", "tok/s", DEFINITIONS["prefill_tok_s"]),
    CardSpec("waited", "waited for text", "s", "How long you stared at nothing: TTFT when streaming, E2E when not."),
    CardSpec("delivery", "engine → window (p50)", "ms", DEFINITIONS["delivery_s"]),
    CardSpec(
        "window_cpu",
        "window's own CPU",
        "cores",
        "The observer effect: the window's GUI thread's CPU time while the reply streamed, over its wall time, "
        "in cores (0.20 = a fifth of one core). Most of it is the window's 25 frames a second, whatever the token rate; "
        "a short reply also carries its start, and a reply longer than any before re-scales the plots' axes. Drawing the "
        "meter takes that much CPU, and on a small machine it is taken from decode: compare TPOT with a bare "
        "`latencylab ask`.",
    ),
    CardSpec(
        "cpu_share",
        "engine's CPU share",
        "%",
        CPU_SHARE_DEFINITION + " Below 75% the reply is marked: other programs slowed it, not the model.",
    ),
)


class StatCard(QFrame):
    def __init__(self, spec: CardSpec, parent=None):
        super().__init__(parent)
        self.spec = spec
        self.value: float | None = None
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setToolTip(spec.tooltip)
        self.setObjectName(f"card_{spec.key}")
        layout = QVBoxLayout(self)
        # Tight: three rows of cards sit above the plots, which need the height more (issue 41).
        layout.setContentsMargins(6, 2, 6, 2)
        layout.setSpacing(0)
        self._title = QLabel()
        self.set_title(spec.title)
        self._value = CardValue("0,000 tokens, 0,000 cached" if spec.unit == "prompt" else "0000.0 tok/s")
        layout.addWidget(self._title)
        layout.addWidget(self._value)

    def set_title(self, title: str, color: str = "#555") -> None:
        self._title.setText(title)
        self._title.setStyleSheet(f"color: {color}; font-size: 10px;")

    def title(self) -> str:
        return self._title.text()

    def set_value(self, value: float | None) -> None:
        self.value = value
        self._value.setText(format_value(value, self.spec.unit))

    def set_text(self, text: str) -> None:
        self._value.setText(text)

    def text(self) -> str:
        return self._value.text()


class CardValue(QWidget):
    """A card's number, painted in a fixed-size box.

    A QLabel re-lays out its window on every setText; with seven cards refreshed several times a
    second, that repainted the whole chat tab each time, taking the CPU from decode. It fills its own
    background, so Qt repaints only the box, not every widget beneath it up to the window.
    """

    def __init__(self, widest: str, parent=None):
        super().__init__(parent)
        self.setAutoFillBackground(True)
        self._text = "–"
        font = QFont(self.font())
        font.setPixelSize(17)
        font.setWeight(QFont.Weight.DemiBold)
        self.setFont(font)
        metrics = self.fontMetrics()
        self._size = QSize(metrics.horizontalAdvance(widest), metrics.height() + 2)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return self._size

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return self._size

    def setText(self, text: str) -> None:  # noqa: N802 - QLabel's name, so it stands in for one
        if text != self._text:
            self._text = text
            self.update()

    def text(self) -> str:
        return self._text

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self._text)
        painter.end()


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    if unit == "ms":
        return f"{value * 1000:.1f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "tok/s":
        return f"{value:.1f}"
    if unit == "%":
        return f"{value * 100:.0f}%"
    if unit in ("cores", "per pass"):
        return f"{value:.2f}"
    return f"{int(value)}"


def count(tokens: int) -> str:
    """A token count in the prompt card's box: "9,999", then "12.3k" (the card is two cells wide)."""
    return f"{tokens:,}" if tokens < 10_000 else f"{tokens / 1000:.1f}k"


class StatCards(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setVerticalSpacing(3)
        self.cards = {spec.key: StatCard(spec) for spec in CARDS}
        # Four columns fit beside the chat on a 1400-pixel screen (five were cut off at the right); the prompt
        # card takes two cells of the first row, next to the TTFT it explains.
        layout.addWidget(self.cards["prompt"], 0, 0, 1, 2)
        for position, card in enumerate(list(self.cards.values())[1:], start=2):
            layout.addWidget(card, position // 4, position % 4)

    def show_summary(self, summary: LatencySummary, streaming: bool) -> None:
        """Show the core's numbers unchanged; only the waited card depends on the mode."""
        values = {
            "ttft": summary.ttft_s,
            "tpot": summary.tpot_s,
            "tok_s": summary.decode_tok_s,
            "tokens": summary.output_tokens,
            "e2e": summary.e2e_s,
            "prefill": summary.prefill_tok_s,
            "waited": summary.ttft_s if streaming else summary.e2e_s,
        }
        for key, value in values.items():
            self.cards[key].set_value(value)

    def show_delivery(self, delivery: dict | None) -> None:
        """A finished reply's engine → window delay: p50 on the card, p50, p95 and max in its tooltip."""
        card = self.cards["delivery"]
        card.set_value(delivery["p50_s"] if delivery else None)
        card.setToolTip(
            card.spec.tooltip
            + (
                ""
                if not delivery
                else f"\nThis reply: p50 {delivery['p50_s'] * 1000:.2f} ms, p95 {delivery['p95_s'] * 1000:.2f} ms, "
                f"max {delivery['max_s'] * 1000:.2f} ms."
            )
        )

    def show_cpu(self, window_share: float | None, engine_share: float | None, note: str | None) -> None:
        """A finished reply's observer cost and whether other programs took the engine's cores."""
        self.cards["window_cpu"].set_value(window_share)
        card = self.cards["cpu_share"]
        card.set_value(engine_share)
        card.setToolTip(card.spec.tooltip + (f"\nThis reply: {note}." if note else ""))

    def show_prompt(self, prompt_tokens: int, cached_tokens: int | None, reason: str | None) -> None:
        """ "465 tokens, 440 cached"; where a server did not say, "? cached" (longer is cut at the card's width); the
        reason in the tooltip."""
        card = self.cards["prompt"]
        if not prompt_tokens:
            card.set_text("–")
        elif reason is None:
            card.set_text(f"{count(prompt_tokens)} tokens")
        else:
            cached = "? cached" if cached_tokens is None else f"{count(cached_tokens)} cached"
            card.set_text(f"{count(prompt_tokens)} tokens, {cached}")
        card.setToolTip(card.spec.tooltip + (f"\nThis reply: {reason}." if reason else ""))

    def show_placement(self, placement: dict | None) -> None:
        """A finished reply against this machine's ceilings: prefill's FLOP/s on the TTFT and prefill cards'
        tooltips, decode's bytes/s on the TPOT and tok/s cards' (core/roofline/placement.py)."""
        from core.roofline.placement import decode_sentence, prefill_sentence

        for keys, sentence in (
            (("ttft", "prefill"), prefill_sentence(placement)),
            (("tpot", "tok_s"), decode_sentence(placement)),
        ):
            for key in keys:
                card = self.cards[key]
                card.setToolTip(card.spec.tooltip + (f"\n{sentence}" if sentence else ""))

    def clear(self) -> None:
        for card in self.cards.values():
            card.set_value(None)
        self.cards["prompt"].setToolTip(PROMPT_TOOLTIP)
