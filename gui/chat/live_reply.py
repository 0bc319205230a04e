"""What a running reply shows, once per frame (25 Hz): text into the transcript, stamps into the meter, the plots.

Tokens that arrive between two frames are kept in a list and applied together: one text insert per
frame, however fast tokens come. The stamps are the engine's, so the plots stay per token. Text,
plots and cards change in the same frame, so Qt repaints the window once for all of them (apart,
they cost three repaints a frame). A token that arrives when the last text frame is a frame old
or older brings the next frame forward to now, so a slow stream waits for no tick and a fast one
waits at most one frame.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject, QTimer, Signal, Slot

from core.chats.record import ReplyRecord
from core.timing.events import TokenEvent
from core.timing.trace import ReplyTrace
from gui.chat.draft_tint import drafted_spans
from gui.chat.reply_controller import ReplyController, ReplyState
from gui.chats.chat_replay import reply_note
from gui.frame_interval import frame_timer


class LiveReply(QObject):
    """Per token it only keeps the token; each frame (frame_timer's tick, or one a token brings forward) puts the
    tokens since the last into the transcript and the meter, and redraws the plots and cards."""

    frame_shown = Signal()  # a frame has put what arrived on screen (the tick's, or one a token brought forward)

    def __init__(self, replies: ReplyController, client, transcript, meter, indicator, prefill_bar, parent=None):
        super().__init__(parent)
        self._replies, self._transcript, self._meter, self._indicator = replies, transcript, meter, indicator
        self._client = client  # gui.engine_client.EngineClient: each frame first reads what the engine has sent
        self._prefill_bar = prefill_bar  # gui.chat.prefill_bar.PrefillBar
        self._visible_chars = 0
        self._pending: list[TokenEvent] = []
        self._draining = False  # a frame is reading the pipe: the tokens it brings need no frame of their own
        self._last_insert_ns = 0
        # Single shot: a frame brought forward for a token that would otherwise wait for the next tick.
        self._early_frame = QTimer(self)
        self._early_frame.setSingleShot(True)
        self._early_frame.timeout.connect(self._on_early_frame)
        # Tokens whose text is in the transcript but not yet on screen: the next viewport paint shows
        # them (the waterfall's paint stamps, streaming only).
        self._awaiting_paint = 0
        self._paint_trace: ReplyTrace | None = None
        self._finished_trace: ReplyTrace | None = None
        self._cpu_at_start_s: float | None = None
        transcript.viewport().installEventFilter(self)
        self.frame_timer = frame_timer(self, self._on_frame)
        replies.reply_started.connect(self._on_started)
        replies.tokens_received.connect(self._on_tokens)
        replies.state_changed.connect(self._on_state)

    @Slot(object)
    def _on_started(self, record: ReplyRecord) -> None:
        self._visible_chars = 0
        self._pending.clear()
        self._awaiting_paint, self._paint_trace, self._finished_trace = 0, record.trace, None
        # The GUI thread's own CPU over the reply (the observer effect): it does the window's work, with the engine
        # in its own process or, in tests, on threads of this one.
        self._cpu_at_start_s = time.thread_time()
        self._transcript.begin_assistant_turn()
        self._meter.begin_reply(record.trace.request_start_ns, (record.context.settings or {}).get("max_new_tokens"))
        self._indicator.setVisible(not self._replies.streaming)
        self._update_indicator(time.perf_counter_ns())
        self.frame_timer.start()

    @Slot(object)
    def _on_tokens(self, tokens: list) -> None:
        self._pending.extend(delivered.event for delivered in tokens)
        if self._draining:
            return  # read by this frame's drain: the frame shows them
        if not self._early_frame.isActive():
            since_ms = (time.perf_counter_ns() - self._last_insert_ns) / 1e6
            delay_ms = int(max(0.0, self.frame_timer.interval() - since_ms))
            if delay_ms < self.frame_timer.remainingTime():
                self._early_frame.start(delay_ms)

    def _apply_pending(self) -> None:
        """Everything that arrived since the last text frame: stamps into the meter, then one text insert."""
        if not self._pending:
            return
        self._last_insert_ns = time.perf_counter_ns()
        tokens, self._pending = self._pending, []
        self._prefill_bar.setVisible(False)  # the first token ends the prefill
        for event in tokens:
            self._meter.record_token(event)
        text = "".join(event.text for event in tokens)
        if self._replies.streaming:
            self._awaiting_paint += len(tokens)
        if self._replies.streaming and text:
            drafted = (
                drafted_spans([event.text for event in tokens], [i for i, event in enumerate(tokens) if event.drafted])
                if self._transcript.tint_drafts
                else ()
            )
            self._transcript.append_reply_text(text, drafted)
            self._visible_chars += len(text)
            self._meter.show_visible_text(time.perf_counter_ns(), self._visible_chars)

    def finish(self, record: ReplyRecord) -> None:
        """Replace the live text with the rendered reply and show the final numbers."""
        self._apply_pending()
        trace = record.trace
        if self._cpu_at_start_s is not None:
            trace.window_cpu_s = time.thread_time() - self._cpu_at_start_s
        self._transcript.finish_assistant_turn(
            trace.text,
            record.context.message_index,
            reply_note(trace, record.context.notice, self._meter.budget_mark(trace, self._replies.streaming)),
            drafted_spans(trace.token_texts, trace.drafted_indices, trace.reasoning_indices),
        )
        self._meter.show_visible_text(time.perf_counter_ns(), len(trace.text))
        self._meter.finish_reply(trace, self._replies.streaming)
        self._finished_trace = trace

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Paint and self._awaiting_paint and self._paint_trace is not None:
            trace, stamp = self._paint_trace, time.perf_counter_ns()
            first_painted = not trace.painted_ns
            trace.painted_ns.extend([stamp] * self._awaiting_paint)
            self._awaiting_paint = 0
            if first_painted and self._finished_trace is trace:
                self._meter.waterfall.show_trace(trace)  # a short reply ended before its first paint
        return False

    @Slot(object)
    def _on_state(self, state: ReplyState) -> None:
        if state not in (ReplyState.GENERATING, ReplyState.STOPPING):
            self.stop()

    def stop(self) -> None:
        self._apply_pending()
        self._early_frame.stop()
        self.frame_timer.stop()
        self._indicator.setVisible(False)
        self._prefill_bar.setVisible(False)

    @Slot()
    def _on_early_frame(self) -> None:
        self.frame_timer.start()  # the next tick a whole frame after this one (the tick itself repeats on its own)
        self._on_frame()

    @Slot()
    def _on_frame(self) -> None:
        self._draining = True
        try:
            self._client.drain()  # tokens held in the pipe since the last frame (gui/engine_client.py)
        finally:
            self._draining = False
        if not self.frame_timer.isActive():
            return  # what was drained ended the reply, and finish() has shown all of it
        self._early_frame.stop()  # this frame shows what the drain brought
        self._apply_pending()
        now_ns = time.perf_counter_ns()
        record = self._replies.record
        trace = record.trace if record else None
        if trace is not None and not trace.output_tokens:
            # Still prefilling: the bar from the layers reported so far, the TTFT marker from the clock.
            self._prefill_bar.show_progress(trace.prefill_progress, now_ns)
            self._meter.show_prefill_elapsed((now_ns - trace.request_start_ns) / 1e6)
        self._meter.tick(now_ns, self._replies.streaming, trace)
        self._update_indicator(now_ns)
        self.frame_shown.emit()

    def _update_indicator(self, now_ns: int) -> None:
        if self._indicator.isHidden():
            return  # streaming: the text itself shows progress, and a hidden label's text costs as much to set
        record = self._replies.record
        trace = record.trace if record else None
        elapsed = (now_ns - trace.request_start_ns) / 1e9 if trace else 0.0
        self._indicator.setText(f"generating… {trace.output_tokens if trace else 0} tokens, {elapsed:.1f} s")
