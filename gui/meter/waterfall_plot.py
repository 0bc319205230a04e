"""Where the last reply's TTFT went: its segments as a horizontal waterfall, one row each, with tooltips."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QToolTip, QWidget

from core.timing.trace import ReplyTrace
from core.timing.waterfall import DECODE_DEFINITIONS, Segment, decode_figures, segments

COLORS = {
    "prepare": "#9aa0a6",
    "queue": "#c5221f",
    "cache": "#188038",
    "prefill": "#e8710a",
    "delivery": "#1a73e8",
    "paint": "#0b6b2b",
    "stop_to_last_token": "#8430ce",
    "cancel": "#b31412",
    "server_first_byte": "#5f6368",
    "server_first_chunk": "#e8710a",
    "send": "#9aa0a6",
}
LABELS = {
    "prepare": "template + tokenise",
    "queue": "wait for compute",
    "cache": "prompt cache",
    "prefill": "prefill",
    "delivery": "token 0 delivered",
    "paint": "token 0 painted",
    "stop_to_last_token": "Stop → last token",
    "cancel": "Stop → engine idle",
    "server_first_byte": "request → headers",
    "server_first_chunk": "headers → 1st chunk",
    "send": "request → engine",
}


def milliseconds(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.1f} ms"


class WaterfallPlot(QWidget):
    """Painted from a handful of rectangles; set once per reply (at its end), never per token."""

    def __init__(self, parent=None):
        super().__init__(parent)
        # Rows and the label column follow the font the screen gives: fixed pixels clipped the labels on X11.
        metrics = self.fontMetrics()
        self.row_height = metrics.height() + 1
        self.top = metrics.height() + 4
        self.label_width = max(metrics.horizontalAdvance(label) for label in LABELS.values()) + 12
        self.setObjectName("waterfall_plot")
        self.segments: list[Segment] = []
        self.figures: dict = {}
        self.token_notes: dict[str, str] = {}  # beside the cache and prefill rows: how many tokens each covered
        self.setMinimumHeight(self.top + 3 * self.row_height + 4)
        self.setToolTip(
            "Where the last reply's time went, on one monotonic clock (perf_counter_ns). "
            "Hover a bar for its definition."
        )

    def show_trace(self, trace: ReplyTrace) -> None:
        self.segments = segments(trace)
        self.figures = decode_figures(trace)
        self.token_notes = {}
        if trace.cached_tokens is not None:
            self.token_notes = {
                "cache": f"{trace.cached_tokens:,} tokens cached",
                "prefill": f"{trace.prefilled_tokens:,} tokens prefilled",
            }
        self.setMinimumHeight(self.top + max(3, len(self.segments)) * self.row_height + 4)
        self.updateGeometry()
        self.update()

    def clear(self) -> None:
        self.segments, self.figures, self.token_notes = [], {}, {}
        self.update()

    def summary_text(self) -> str:
        if not self.segments:
            return "Waterfall: where the TTFT went (after a reply)"
        f = self.figures
        # E2E first: where the meter's column is narrow (1,259 pixels of window), the line is cut at its end.
        return (
            f"E2E {milliseconds(f.get('e2e_s'))} · decode: delivery p50 {milliseconds(f.get('delivery_p50_s'))}, "
            f"p95 {milliseconds(f.get('delivery_p95_s'))} · paint p50 {milliseconds(f.get('paint_p50_s'))}, "
            f"p95 {milliseconds(f.get('paint_p95_s'))}"
        )

    def shown_summary(self) -> str:
        """The summary as it fits the widget: cut with '…' (it was cut mid-figure, "E2E 741.1" without its unit); the
        whole of it is the header's tooltip."""
        return self.fontMetrics().elidedText(self.summary_text(), Qt.TextElideMode.ElideRight, self.width() - 8)

    def segment_at(self, y: float) -> Segment | None:
        row = int((y - self.top) // self.row_height)
        return self.segments[row] if y >= self.top and 0 <= row < len(self.segments) else None

    def tooltip_for(self, segment: Segment) -> str:
        note = f", {self.token_notes[segment.name]}" if segment.name in self.token_notes else ""
        return (
            f"{LABELS[segment.name]}: {milliseconds(segment.duration_s)}{note} "
            f"({segment.start_s * 1000:.1f} → {segment.end_s * 1000:.1f} ms after request start)\n"
            f"{segment.definition}"
        )

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            segment = self.segment_at(event.pos().y())
            if segment is not None:
                QToolTip.showText(event.globalPos(), self.tooltip_for(segment), self)
            elif self.segments and event.pos().y() < self.top:
                definitions = "\n".join(DECODE_DEFINITIONS.values())
                QToolTip.showText(event.globalPos(), f"{self.summary_text()}\n{definitions}", self)
            else:
                QToolTip.showText(event.globalPos(), self.toolTip(), self)
            return True
        return super().event(event)

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        painter.setPen(QColor("#3c4043"))
        painter.drawText(
            QRectF(4, 0, self.width() - 8, self.top),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            self.shown_summary(),
        )
        if not self.segments:
            return
        end_s = max(segment.end_s for segment in self.segments) or 1e-9
        # Room right of the longest bar for its figure (and token count): drawn past the widget, it was cut off.
        widest = "0000.0 ms" + (" · 00,000 tokens prefilled" if self.token_notes else "")
        scale = max(1.0, self.width() - self.label_width - self.fontMetrics().horizontalAdvance(widest) - 8) / end_s
        for row, segment in enumerate(self.segments):
            y = self.top + row * self.row_height
            painter.setPen(QColor("#3c4043"))
            painter.drawText(
                QRectF(4, y, self.label_width - 8, self.row_height),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                LABELS[segment.name],
            )
            x = self.label_width + segment.start_s * scale
            width = max(1.0, segment.duration_s * scale)  # a 0.1 ms segment still shows where it is
            painter.fillRect(QRectF(x, y + 2, width, self.row_height - 3), QColor(COLORS[segment.name]))
            note = self.token_notes.get(segment.name)
            painter.drawText(
                QRectF(x + width + 3, y, 260, self.row_height),
                Qt.AlignmentFlag.AlignVCenter,
                milliseconds(segment.duration_s) + (f" · {note}" if note else ""),
            )
