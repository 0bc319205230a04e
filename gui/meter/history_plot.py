"""TTFT and TPOT of every reply in this chat, against its prompt and against the tokens it really prefilled; replies
over the latency budget ringed in red, replies whose diagnosis found a cause marked with an amber diamond, the budget's
two limits as dashed lines."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot

from core.timing.metrics import DEFINITIONS
from gui.plotting.empty_note import EmptyPlotNote
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot

# Half the largest marker (the 15 px over-budget ring) and a pixel: room kept above the highest point and below 0.
MARKER_ROOM_PX = 9


class HistoryPlot(PagePlot):
    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="This chat, reply by reply",
            bottom="tokens: the whole prompt, or only those prefilled",
            left="ms",
            tooltip="Each reply adds a point per series. The prompt grows with the chat history. Without the "
            "prompt cache the whole prompt is prefilled each turn, so TTFT rises with it; with the cache only "
            "the new tokens are prefilled, and TTFT follows those (hollow squares), staying nearly flat. "
            "Decode reads the same weights per token, so TPOT stays flat.\n"
            f"TTFT: {DEFINITIONS['ttft_s']}\nTPOT: {DEFINITIONS['tpot_s']}",
        )
        self.ttft_item = self.plot(
            [], [], pen=pg.mkPen("#e8710a", width=2), symbol="s", symbolSize=7, symbolBrush="#e8710a", name="TTFT"
        )
        self.prefilled_item = self.plot(
            [],
            [],
            pen=pg.mkPen("#e8710a", width=1, style=Qt.PenStyle.DashLine),
            symbol="s",
            symbolSize=8,
            symbolBrush=None,
            symbolPen="#e8710a",
            name="TTFT vs tokens prefilled",
        )
        self.tpot_item = self.plot(
            [], [], pen=pg.mkPen("#188038", width=2), symbol="o", symbolSize=7, symbolBrush="#188038", name="TPOT"
        )
        self.over_item = self._hollow_markers("o", 15, "#b00020", "over budget")
        self.found_item = self._hollow_markers("d", 13, "#8a5300", "slowed: see why")
        # The budget's limits, outside the autorange: a 1 s TTFT budget must not squash replies of 50 ms.
        self.ttft_budget_line = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen("#e8710a", width=1, style=Qt.PenStyle.DotLine),
            label="TTFT budget",
            labelOpts={"position": 0.1, "color": "#e8710a"},
        )
        self.tpot_budget_line = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen("#188038", width=1, style=Qt.PenStyle.DotLine),
            label="TPOT budget",
            labelOpts={"position": 0.9, "color": "#188038"},
        )
        for line in (self.ttft_budget_line, self.tpot_budget_line):
            self.addItem(line, ignoreBounds=True)
            line.setVisible(False)
        # Points come only when a reply ends: until then, a note instead of 0-1 axes with nothing on them.
        self.empty_note = EmptyPlotNote(self, "Each reply adds its TTFT and TPOT here, against its prompt's length.")
        self._prompt_tokens = GrowableBuffer(32)
        self._ttft_ms = GrowableBuffer(32)
        self._tpot_prompt_tokens = GrowableBuffer(32)
        self._tpot_ms = GrowableBuffer(32)
        self._prefilled_tokens = GrowableBuffer(32)
        self._prefilled_ttft_ms = GrowableBuffer(32)
        self._over_prompt_tokens = GrowableBuffer(32)
        self._over_ttft_ms = GrowableBuffer(32)
        self._found_prompt_tokens = GrowableBuffer(32)
        self._found_ms = GrowableBuffer(32)
        self._budget_shown = False
        self._dirty = True
        self._top = 1.0  # the highest point's value, for the y range (refresh)
        self.getViewBox().sigResized.connect(self._fit_y)  # the room a marker needs is in pixels

    def _hollow_markers(self, symbol: str, size: int, color: str, name: str):
        """Outlined markers drawn over a reply's point: its mark against the budget, or its diagnosis's."""
        return self.plot(
            [],
            [],
            pen=None,
            symbol=symbol,
            symbolSize=size,
            symbolBrush=pg.mkBrush(0, 0, 0, 0),
            symbolPen=pg.mkPen(color, width=2),
            name=name,
        )

    def add_reply(
        self,
        prompt_tokens: int,
        ttft_s: float | None,
        tpot_s: float | None,
        prefilled_tokens: int | None = None,
        over_budget: bool | None = None,
        found: bool = False,
    ) -> None:
        """prefilled_tokens: the prompt less what the prompt cache gave; None where unknown (no point then).
        over_budget: True rings the reply's TTFT point in red; found: its diagnosis named a cause, marked on its TPOT
        point (its TTFT's where it has none)."""
        marked = tpot_s if tpot_s is not None else ttft_s
        if found and marked is not None:
            self._found_prompt_tokens.append(prompt_tokens)
            self._found_ms.append(marked * 1000)
        if ttft_s is not None:
            self._prompt_tokens.append(prompt_tokens)
            self._ttft_ms.append(ttft_s * 1000)
            if over_budget:
                self._over_prompt_tokens.append(prompt_tokens)
                self._over_ttft_ms.append(ttft_s * 1000)
            if prefilled_tokens is not None:
                self._prefilled_tokens.append(prefilled_tokens)
                self._prefilled_ttft_ms.append(ttft_s * 1000)
        if tpot_s is not None:
            self._tpot_prompt_tokens.append(prompt_tokens)
            self._tpot_ms.append(tpot_s * 1000)
        self._dirty = True

    def clear_history(self) -> None:
        for buffer in (
            self._prompt_tokens,
            self._ttft_ms,
            self._tpot_prompt_tokens,
            self._tpot_ms,
            self._prefilled_tokens,
            self._prefilled_ttft_ms,
            self._over_prompt_tokens,
            self._over_ttft_ms,
            self._found_prompt_tokens,
            self._found_ms,
        ):
            buffer.clear()
        self._dirty = True

    def refresh(self) -> None:
        """Only a finished reply changes this plot, so most frames skip it."""
        if not self._dirty:
            return
        self._dirty = False
        self.empty_note.show_when(not len(self._prompt_tokens) and not len(self._tpot_prompt_tokens))
        self.ttft_item.setData(self._prompt_tokens.view(), self._ttft_ms.view())
        self.tpot_item.setData(self._tpot_prompt_tokens.view(), self._tpot_ms.view())
        self.prefilled_item.setData(self._prefilled_tokens.view(), self._prefilled_ttft_ms.view())
        self.over_item.setData(self._over_prompt_tokens.view(), self._over_ttft_ms.view())
        self.found_item.setData(self._found_prompt_tokens.view(), self._found_ms.view())
        # Both axes start at 0: a lone first reply otherwise sat in a range like 43.6-44.4 tokens,
        # and growth is read against zero, not against the smallest value so far.
        self.setXRange(0, max(self._largest(self._prompt_tokens, self._tpot_prompt_tokens), 1.0), padding=0.05)
        top = max(self._largest(self._ttft_ms, self._tpot_ms), 1.0)
        self._top = top
        self._fit_y()
        # A limit above every reply stays out of view (its label would sit at the edge, as if it were there).
        for line in (self.ttft_budget_line, self.tpot_budget_line):
            line.setVisible(
                self._budget_shown
                and bool(len(self._prompt_tokens) or len(self._tpot_ms))
                and line.value() <= top * 1.05
            )

    @Slot()
    def _fit_y(self, *_) -> None:
        """0 to the highest point, with room for a marker's half at either end: 5% of a short plot's height is a
        pixel or two, and the top reply's square was cut in half."""
        height = self.getViewBox().height()
        self.setYRange(0, self._top, padding=max(0.05, MARKER_ROOM_PX / height) if height > 0 else 0.05)

    def show_budget(self, ttft_s: float, tpot_s: float) -> None:
        """The budget's limits as dotted lines (seen when the replies come near them)."""
        self.ttft_budget_line.setValue(ttft_s * 1000)
        self.tpot_budget_line.setValue(tpot_s * 1000)
        self._budget_shown = True
        self._dirty = True

    @property
    def over_budget_points(self) -> int:
        return len(self._over_ttft_ms)

    @property
    def found_points(self) -> int:
        return len(self._found_ms)

    @staticmethod
    def _largest(*buffers: GrowableBuffer) -> float:
        return max((float(buffer.view().max()) for buffer in buffers if len(buffer)), default=0.0)
