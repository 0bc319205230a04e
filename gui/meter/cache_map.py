"""The prompt-cache map: each reply's prompt as a bar, the part reused from the cache and the part prefilled,
and where reuse broke, why and at which token."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QToolTip, QWidget

from core.timing.export import PROMPT_CACHE_DEFINITIONS
from core.timing.trace import ReplyTrace

REUSED, PREFILLED, UNKNOWN, BREAK = QColor("#188038"), QColor("#e8710a"), QColor("#bdc1c6"), QColor("#202124")
TITLE = "Prompt cache, reply by reply"
EMPTY = "Each reply's prompt appears here: the part reused from the cache, and the part prefilled."
TOOLTIP = (
    "Each row is one reply's prompt, as long as its bar: green is reused from the prompt cache (the chat's "
    "earlier turns, not computed again), orange is prefilled by this reply. A black tick marks where reuse of "
    "the cached history broke, with the reason beside it. Grey: a server that did not report its cache.\n"
    + PROMPT_CACHE_DEFINITIONS["cached_tokens"]
)


@dataclass(frozen=True)
class CacheRow:
    """One reply's prompt as the map draws it."""

    number: int
    prompt_tokens: int
    cached_tokens: int | None
    reason: str
    break_at: int | None

    @property
    def caption(self) -> str:
        cached = "cache not reported" if self.cached_tokens is None else f"{self.cached_tokens:,} cached"
        broke = self.break_at is not None or self.cached_tokens in (0, None)
        return f"{self.prompt_tokens:,} tokens, {cached}" + (f" · {self.reason}" if broke else "")


class CacheMap(QWidget):
    """Painted from a list of rows; a row is added when a reply ends, never per token."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("cache_map")
        metrics = self.fontMetrics()
        self.row_height = metrics.height() + 4
        self.top = metrics.height() + 6
        self.number_width = metrics.horizontalAdvance("#000") + 8
        self.rows: list[CacheRow] = []
        self.setMinimumHeight(self.top + 3 * self.row_height)
        self.setToolTip(TOOLTIP)

    def add_reply(self, trace: ReplyTrace) -> None:
        if trace.cache_reason is None or not trace.prompt_tokens:
            return  # a reply that never reached its prompt's pass (refused, or from before the cache existed)
        self.rows.append(
            CacheRow(
                len(self.rows) + 1, trace.prompt_tokens, trace.cached_tokens, trace.cache_reason, trace.cache_break_at
            )
        )
        self.update()

    def clear(self) -> None:
        self.rows.clear()
        self.update()

    def visible_rows(self) -> list[CacheRow]:
        """The newest rows that fit, oldest first."""
        fit = max(1, (self.height() - self.top) // self.row_height)
        return self.rows[-fit:]

    def row_at(self, y: float) -> CacheRow | None:
        rows = self.visible_rows()
        index = int((y - self.top) // self.row_height)
        return rows[index] if y >= self.top and 0 <= index < len(rows) else None

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            row = self.row_at(event.pos().y())
            text = (
                self.toolTip()
                if row is None
                else (
                    f"Reply {row.number}: {row.prompt_tokens:,} prompt tokens; "
                    + (
                        "the cache was not reported"
                        if row.cached_tokens is None
                        else f"{row.cached_tokens:,} reused, {row.prompt_tokens - row.cached_tokens:,} prefilled"
                    )
                    + f".\n{row.reason}"
                    + (f" (reuse stopped at token {row.break_at:,})." if row.break_at is not None else ".")
                )
            )
            QToolTip.showText(event.globalPos(), text, self)
            return True
        return super().event(event)

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        painter.setPen(QColor("#3c4043"))
        title = TITLE if self.rows else f"{TITLE}: {EMPTY}"
        hidden = len(self.rows) - len(self.visible_rows())
        if hidden > 0:
            title += f" (last {len(self.rows) - hidden} of {len(self.rows)})"
        painter.drawText(
            QRectF(4, 0, self.width() - 8, self.top), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title
        )
        rows = self.visible_rows() if self.rows else []
        if not rows:
            return
        longest = max(row.prompt_tokens for row in rows)
        bar_width = max(40.0, (self.width() - self.number_width) * 0.45)
        scale = bar_width / max(longest, 1)
        text_x = self.number_width + bar_width + 8
        for index, row in enumerate(rows):
            y = self.top + index * self.row_height
            painter.setPen(QColor("#3c4043"))
            painter.drawText(
                QRectF(2, y, self.number_width - 6, self.row_height),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                f"#{row.number}",
            )
            x, bar_y, height = float(self.number_width), y + 3, self.row_height - 6
            if row.cached_tokens is None:
                painter.fillRect(QRectF(x, bar_y, max(1.0, row.prompt_tokens * scale), height), UNKNOWN)
            else:
                reused = row.cached_tokens * scale
                painter.fillRect(QRectF(x, bar_y, reused, height), REUSED)
                painter.fillRect(
                    QRectF(x + reused, bar_y, max(1.0, (row.prompt_tokens - row.cached_tokens) * scale), height),
                    PREFILLED,
                )
            if row.break_at is not None:
                painter.setPen(QPen(BREAK, 2))
                tick = x + row.break_at * scale
                painter.drawLine(int(tick), y + 1, int(tick), y + self.row_height - 1)
            painter.setPen(QColor("#3c4043"))
            painter.drawText(
                QRectF(text_x, y, self.width() - text_x - 4, self.row_height),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                painter.fontMetrics().elidedText(
                    row.caption, Qt.TextElideMode.ElideRight, int(self.width() - text_x - 4)
                ),
            )
