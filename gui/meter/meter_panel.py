"""The meter: stat cards (and a reply's speculation's), the line that says why the reply was slow, and the chat's budget
line above its views (this reply, where its time went, this chat)."""

from __future__ import annotations

from PySide6.QtCore import QRect, Slot
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QVBoxLayout, QWidget

from core.diagnosis.diagnose import HEALTHY, diagnose
from core.model.facts import ModelFacts
from core.roofline.placement import reply_placement
from core.settings import LatencyBudget
from core.timing.budget import BudgetMark, judge, tally_line
from core.timing.cpu_share import contention_note
from core.timing.events import TokenEvent
from core.timing.export import delivery_summary
from core.timing.running_median import RunningMedian
from core.timing.trace import ReplyTrace
from gui.meter.budget_line import BudgetLine
from gui.meter.cache_map import CacheMap
from gui.meter.diagnosis_line import DiagnosisLine
from gui.meter.history_plot import HistoryPlot
from gui.meter.interval_plot import IntervalPlot
from gui.meter.meter_views import LEAST_DATA_PX, MeterViews, stacked
from gui.meter.server_view import ServerView
from gui.meter.speculation_cards import SpeculationCards
from gui.meter.stat_cards import StatCards
from gui.meter.visible_text_plot import VisibleTextPlot
from gui.meter.waterfall_plot import WaterfallPlot
from gui.plotting.data_height import hold_data_height

# Numbers that change 25 times a second cannot be read, and relaying out seven cards each frame cost
# as much as painting the plots; the final values are shown exactly when the reply ends. Four times a
# second still reads as live; at 150 ms the cards took 0.006 of a core while a reply streamed.
CARD_INTERVAL_NS = 250_000_000


class MeterPanel(QWidget):
    """Per-token updates only append to buffers; refresh() pushes them to the plots (25 times a second)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.cards = StatCards()
        self.speculation_cards = SpeculationCards()
        self.diagnosis_line = DiagnosisLine()
        self.interval_plot = IntervalPlot()
        self.visible_plot = VisibleTextPlot()
        self.history_plot = HistoryPlot()
        self.cache_map = CacheMap()
        self.waterfall = WaterfallPlot()
        self.server_view = ServerView()
        self.budget = LatencyBudget()
        self.budget_line = BudgetLine()
        self._judged: list[tuple[ReplyTrace, bool]] = []  # this chat's replies, for the budget's tally
        for plot in (self.interval_plot, self.visible_plot, self.history_plot):
            hold_data_height(plot, LEAST_DATA_PX)
        self.views = MeterViews(
            (self.interval_plot, self.visible_plot),
            (self.waterfall, self.server_view),
            (self.history_plot, self.cache_map),
        )
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.cards)
        layout.addWidget(self.speculation_cards)
        layout.addWidget(self.diagnosis_line)
        layout.addWidget(self.budget_line)
        layout.addWidget(self.views, stretch=1)
        self._median = RunningMedian()
        self._previous_stamp_ns: int | None = None
        self._previous_chunk: int | None = None
        self._request_start_ns = 0
        self._cards_shown_ns: int | None = None
        self._arithmetic: dict | None = None  # the model's shape, for the roofline's counts
        self._ceilings: dict | None = None  # this machine's ceilings, when measured
        self.set_budget(self.budget)

    def begin_reply(self, request_start_ns: int, budget_tokens: int | None = None) -> None:
        """budget_tokens: the reply's max new tokens, which the window's first reply sizes its plots' axes by."""
        self._request_start_ns = request_start_ns
        self._median = RunningMedian()
        self._previous_stamp_ns = None
        self._previous_chunk = None
        self._cards_shown_ns = None
        self.interval_plot.reset(budget_tokens)
        self.visible_plot.reset(budget_tokens)
        self.cards.clear()
        self.speculation_cards.clear()
        self.diagnosis_line.mark_stale()

    @Slot(int)
    def size_for_budget(self, budget_tokens: int) -> None:
        """Until a reply has ended here, the live plots' axes span what max new tokens can reach
        (gui/meter/first_reply_axes.py)."""
        self.interval_plot.size_for_budget(budget_tokens)
        self.visible_plot.size_for_budget(budget_tokens)

    def record_token(self, event: TokenEvent) -> None:
        if event.chunk is not None:
            # Over a network an interval is a gap between chunks: a chunk's other tokens add no point.
            if event.chunk == self._previous_chunk:
                return
            self._previous_chunk = event.chunk
            if event.timestamp_ns == self._previous_stamp_ns:
                return  # read with the chunk before it (stamped on one arrival): no gap between them to draw
        previous, self._previous_stamp_ns = self._previous_stamp_ns, event.timestamp_ns
        if previous is None:
            self.interval_plot.add_ttft((event.timestamp_ns - self._request_start_ns) / 1e6)
        else:
            interval_ms = (event.timestamp_ns - previous) / 1e6
            self.interval_plot.add_interval(event.index, interval_ms, self._median.add(interval_ms), event.drafted)

    def show_prefill_elapsed(self, elapsed_ms: float) -> None:
        """Before the first token: token 0's square grows with the time spent so far (the TTFT to be)."""
        if self._previous_stamp_ns is None:
            self.interval_plot.grow_ttft(elapsed_ms)

    def show_visible_text(self, shown_ns: int, visible_chars: int) -> None:
        self.visible_plot.show_characters(self._seconds(shown_ns), visible_chars)

    def tick(self, now_ns: int, streaming: bool, trace: ReplyTrace | None = None) -> None:
        """A frame: the plots take what arrived, and the cards, every CARD_INTERVAL_NS, the reply's numbers so far."""
        self.visible_plot.advance_clock(self._seconds(now_ns))
        cards_due = self._cards_shown_ns is None or now_ns - self._cards_shown_ns >= CARD_INTERVAL_NS
        if trace is not None and cards_due:
            if trace.output_tokens:  # its summary only when the cards show it: most frames do not
                self.cards.show_summary(trace.summary(), streaming)
                self._cards_shown_ns = now_ns
            self.cards.show_prompt(trace.prompt_tokens, trace.cached_tokens, trace.cache_reason)
        self.refresh()

    def set_model_facts(self, facts: ModelFacts) -> None:
        """A loaded model's facts: its shape and (when measured) the machine's ceilings, for the cards' tooltips."""
        self._arithmetic = facts.arithmetic
        self._ceilings = facts.ceilings

    def set_ceilings(self, ceilings: dict | None) -> None:
        """Ceilings the Lab has just measured."""
        if ceilings:
            self._ceilings = ceilings

    def finish_reply(self, trace: ReplyTrace, streaming: bool) -> None:
        # Diagnosed here, where the window's own CPU over the reply is known, before the chat saves the reply.
        trace.diagnosis = diagnose(trace, self._arithmetic, self._ceilings)
        self.diagnosis_line.show_findings(trace.diagnosis)
        metrics = trace.metrics()
        self.cards.show_summary(metrics, streaming)
        self.cards.show_delivery(delivery_summary(trace))
        self.cards.show_prompt(trace.prompt_tokens, trace.cached_tokens, trace.cache_reason)
        self.cards.show_cpu(trace.window_cpu_share, trace.cpu_share, contention_note(trace.cpu_share))
        self.add_history(trace, streaming)
        self.cards.show_placement(reply_placement(trace, self._arithmetic, self._ceilings))
        self.speculation_cards.show_report(trace.speculation, trace.output_tokens)
        self.interval_plot.show_passes(trace.speculation.pass_marks if trace.speculation else [])
        self.waterfall.show_trace(trace)
        self.server_view.show_trace(trace)
        # The live plots' axes grow in steps while a reply streams; the finished reply is shown on axes fitted to it.
        self.history_plot.refresh()
        self.interval_plot.settle()
        self.visible_plot.settle()

    def add_history(self, trace: ReplyTrace, streaming: bool = True) -> None:
        """A finished reply on the chat's plots: TTFT and TPOT against its prompt, its prompt-cache row, and its
        mark against the budget."""
        self._judged.append((trace, streaming))
        self._plot_history(trace, streaming)
        self.cache_map.add_reply(trace)
        self._show_tally()

    def budget_mark(self, trace: ReplyTrace, streaming: bool) -> BudgetMark:
        return judge(trace, streaming, self.budget)

    def set_budget(self, budget: LatencyBudget) -> None:
        """Judge this chat's replies again against a new budget."""
        self.budget = budget
        self._show_history_again()

    @Slot()
    def forget_last_reply(self) -> None:
        """The chat's last reply was dropped (regenerated): its mark, points and prompt-cache row leave the chat's
        views, as they leave the saved chat (reopened, it shows the replies it kept)."""
        if self._judged:
            self._judged.pop()
            self._show_history_again()

    def _show_history_again(self) -> None:
        self.history_plot.clear_history()
        self.history_plot.show_budget(self.budget.ttft_s, self.budget.tpot_s)
        self.cache_map.clear()
        for trace, streaming in self._judged:
            self._plot_history(trace, streaming)
            self.cache_map.add_reply(trace)
        self._show_tally()
        self.history_plot.refresh()

    def _plot_history(self, trace: ReplyTrace, streaming: bool) -> None:
        metrics = trace.metrics()
        within = self.budget_mark(trace, streaming).within
        if trace.diagnosis is None:  # a chat saved before replies were diagnosed
            trace.diagnosis = diagnose(trace, self._arithmetic, self._ceilings)
        found = any(finding.kind != HEALTHY for finding in trace.diagnosis)
        self.history_plot.add_reply(
            trace.prompt_tokens,
            metrics.ttft_s,
            metrics.tpot_s,
            trace.prefilled_tokens,
            over_budget=within is False,
            found=found,
        )

    def _show_tally(self) -> None:
        marks = [self.budget_mark(trace, streaming) for trace, streaming in self._judged]
        self.budget_line.show_tally(self.budget, tally_line(marks), marks[-1] if marks else None)

    def reset_chat(self) -> None:
        self._judged.clear()
        self.speculation_cards.show_report(None, 0)
        self.diagnosis_line.clear()
        self._show_tally()
        self.history_plot.clear_history()
        self.cache_map.clear()
        self.waterfall.clear()
        self.server_view.clear()
        self.visible_plot.forget_previous()
        self.begin_reply(0)
        self.refresh()

    def picture(self) -> QPixmap:
        """The cards and the budget line over every view, each tab's page in turn: what 'Export plots' saves."""
        above_views = self.grab(QRect(0, 0, self.width(), self.views.y()))
        return stacked([above_views, *self.views.page_pictures()])

    def refresh(self) -> None:
        self.interval_plot.refresh()
        self.visible_plot.refresh()
        self.history_plot.refresh()

    def _seconds(self, stamp_ns: int) -> float:
        return (stamp_ns - self._request_start_ns) / 1e9
