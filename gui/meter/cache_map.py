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
REASON_COLOR = "#5f6368"
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
    def counts(self) -> str:
        cached = "cache not reported" if self.cached_tokens is None else f"{self.cached_tokens:,} cached"
        return f"{self.prompt_tokens:,} tokens, {cached}"

    @property
    def shows_reason(self) -> bool:
        """Why reuse broke, or why there was none; a chat reused whole needs no words."""
        return self.break_at is not None or self.cached_tokens in (0, None)

    @property
    def caption(self) -> str:
        return self.counts + (f" · {self.reason}" if self.shows_reason else "")


@dataclass(frozen=True)
class Text:
    """A text and the rectangle it is drawn in."""

    rect: QRectF
    flags: int
    text: str
    color: str = "#3c4043"


@dataclass(frozen=True)
class PlacedRow:
    """A row where it is drawn: its bar's line (number, bar, counts) and the reason, wrapped, on the lines below."""

    row: CacheRow
    top: float
    bar: QRectF
    texts: tuple[Text, ...]


LEFT, RIGHT = Qt.AlignmentFlag.AlignLeft, Qt.AlignmentFlag.AlignRight
MIDDLE, WRAP = Qt.AlignmentFlag.AlignVCenter, Qt.TextFlag.TextWordWrap


class CacheMap(QWidget):
    """Painted from a list of rows; a row is added when a reply ends, never per token. No text is elided: the reason
    (up to about 90 characters) was cut to 'nothing cached yet: ...' beside the bar, so it has lines of its own."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("cache_map")
        metrics = self.fontMetrics()
        self.row_height = metrics.height() + 4
        self.top = metrics.height() + 6
        self.number_width = metrics.horizontalAdvance("#000") + 8
        self.rows: list[CacheRow] = []
        # Room for the title and two replies with a reason each: a chat's first turns.
        self.setMinimumHeight(self.top + 4 * self.row_height)
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
        return [placed.row for placed in self.placed_rows()]

    def row_at(self, y: float) -> CacheRow | None:
        for placed in self.placed_rows():
            if placed.top <= y < placed.top + self._row_span(placed.row):
                return placed.row
        return None

    def title(self) -> Text:
        hidden = len(self.rows) - len(self.visible_rows())
        text = TITLE + (f" (last {len(self.rows) - hidden} of {len(self.rows)})" if hidden > 0 else "")
        return Text(QRectF(4, 0, self.width() - 8, self.top), LEFT | MIDDLE, text)

    def empty_note(self) -> Text:
        return Text(QRectF(4, self.top, self.width() - 8, self.height() - self.top), LEFT | WRAP, EMPTY)

    def placed_rows(self) -> list[PlacedRow]:
        """The newest rows that fit the height, oldest first, each where it is drawn (the newest, at least)."""
        room = float(self.height() - self.top)
        kept: list[CacheRow] = []
        for row in reversed(self.rows):
            room -= self._row_span(row)
            if room < 0 and kept:
                break
            kept.append(row)
        kept.reverse()
        longest = max((row.prompt_tokens for row in kept), default=1)
        widest_counts = max((self.fontMetrics().horizontalAdvance(row.counts) for row in kept), default=0)
        # The bar takes up to 45% of the width, and leaves the counts beside it their whole width.
        bar_room = self.width() - self.number_width - widest_counts - 12
        bar_width = max(40.0, min((self.width() - self.number_width) * 0.45, bar_room))
        placed, y = [], float(self.top)
        for row in kept:
            placed.append(self._place(row, y, bar_width, bar_width / max(longest, 1)))
            y += self._row_span(row)
        return placed

    def _place(self, row: CacheRow, y: float, bar_width: float, scale: float) -> PlacedRow:
        text_x = self.number_width + bar_width + 8
        texts = [
            Text(QRectF(2, y, self.number_width - 6, self.row_height), RIGHT | MIDDLE, f"#{row.number}"),
            Text(QRectF(text_x, y, self.width() - text_x - 4, self.row_height), LEFT | MIDDLE, row.counts),
        ]
        if row.shows_reason:
            height = self._reason_height(row)
            texts.append(Text(self._reason_rect(y + self.row_height, height), LEFT | WRAP, row.reason, REASON_COLOR))
        bar = QRectF(self.number_width, y + 3, max(1.0, row.prompt_tokens * scale), self.row_height - 6)
        return PlacedRow(row, y, bar, tuple(texts))

    def _reason_rect(self, top: float, height: float) -> QRectF:
        return QRectF(self.number_width, top, self.width() - self.number_width - 4, height)

    def _reason_height(self, row: CacheRow) -> float:
        wrapped = self.fontMetrics().boundingRect(self._reason_rect(0, 10_000).toRect(), int(LEFT | WRAP), row.reason)
        return float(wrapped.height() + 2)

    def _row_span(self, row: CacheRow) -> float:
        return self.row_height + (self._reason_height(row) if row.shows_reason else 0.0)

    def cut_texts(self) -> list[str]:
        """The texts drawn that their rectangles do not hold: none, whatever the width."""
        texts = [self.title()] + [text for placed in self.placed_rows() for text in placed.texts]
        if not self.rows:
            texts.append(self.empty_note())
        metrics, inside = self.fontMetrics(), self.rect()
        return [
            text.text
            for text in texts
            if not inside.contains(metrics.boundingRect(text.rect.toRect(), int(text.flags), text.text))
            or not text.rect.toRect().contains(metrics.boundingRect(text.rect.toRect(), int(text.flags), text.text))
        ]

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
        texts = [self.title()]
        if not self.rows:
            texts.append(self.empty_note())
        for placed in self.placed_rows():
            self._paint_bar(painter, placed)
            texts.extend(placed.texts)
        for text in texts:
            painter.setPen(QColor(text.color))
            painter.drawText(text.rect, int(text.flags), text.text)

    def _paint_bar(self, painter: QPainter, placed: PlacedRow) -> None:
        row, bar = placed.row, placed.bar
        if row.cached_tokens is None:
            painter.fillRect(bar, UNKNOWN)
        else:
            scale = bar.width() / row.prompt_tokens
            reused = row.cached_tokens * scale
            painter.fillRect(QRectF(bar.x(), bar.y(), reused, bar.height()), REUSED)
            painter.fillRect(QRectF(bar.x() + reused, bar.y(), max(1.0, bar.width() - reused), bar.height()), PREFILLED)
        if row.break_at is not None:
            painter.setPen(QPen(BREAK, 2))
            tick = int(bar.x() + row.break_at * bar.width() / row.prompt_tokens)
            painter.drawLine(tick, int(placed.top) + 1, tick, int(placed.top + self.row_height) - 1)
