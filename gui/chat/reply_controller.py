"""The reply state machine, free of widgets: idle, queued while the model loads, generating, stopping.

It owns each reply's request and its record (trace and context), sends the request to the engine as
plain data, and turns the engine's events into signals for the window. The chat it answers in is
the open chat (gui/chats/saved_chats.py): messages enter it only once the reply has really started,
so a refused message is never lost from the message box.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from enum import Enum

from PySide6.QtCore import QObject, Signal, Slot

from core.chats.record import ReplyRecord, without_replaced
from core.chats.reply_context import ReplyContext
from core.engine.messages import Delivered, JobDone, JobEvent, JobFailed, ReplyJob
from core.errors import InvalidSettingsError
from core.timing.events import FinishedEvent, PrefillProgress, PromptReady, ReplyRefused, StopReason, TokenEvent
from core.timing.trace import ReplyTrace


class ReplyState(Enum):
    """Where the chat's reply is; Stop means something different in each."""

    IDLE = "idle"
    QUEUED = "queued"  # sent while the model loads: the message waits in the box
    GENERATING = "generating"
    STOPPING = "stopping"  # Stop was asked; the reply ends at the next layer or token


# (settings, system prompt, streaming) for the next reply; raises InvalidSettingsError for a bad form.
SettingsSource = Callable[[], tuple]


class ReplyController(QObject):
    state_changed = Signal(object)  # ReplyState
    message_accepted = Signal(str, int)  # the user's text and its index: it left the box and joined the chat
    reply_started = Signal(object)  # ReplyRecord, whose trace fills as tokens arrive
    prefill_progressed = Signal(object)  # PrefillProgress, already in the record's trace
    # A list of Delivered(TokenEvent), already in the record's trace: the tokens of one read of the engine's pipe.
    tokens_received = Signal(object)
    # Each of them alone, for observers that act on one token (a probe, tests); emitted only while one is connected.
    token_received = Signal(object)
    reply_finished = Signal(object)  # ReplyRecord, with the chat updated
    reply_refused = Signal(str, bool)  # why; whether the user's message is still in the box
    last_reply_dropped = Signal()  # Regenerate took the last reply out of the chat
    status_posted = Signal(str)  # a passing note for the status bar

    def __init__(self, chat, models, settings_source: SettingsSource, parent=None):
        super().__init__(parent)
        self._chat = chat  # gui.chats.saved_chats.SavedChats: the open chat
        self._models = models  # gui.model.model_controller.ModelController
        self._settings_source = settings_source
        self.state = ReplyState.IDLE
        self.record: ReplyRecord | None = None
        self.streaming = True
        self.ignore_eos = False  # benchmarks: decode exactly max new tokens
        self._reply_id = 0
        self._queued_text: str | None = None  # sent while the model loads; still in the box
        self._pending_text: str | None = None  # sent to the engine, not yet accepted into the chat
        self._closing = False
        client = models.client
        client.reply_events_arrived.connect(self._on_reply_events)
        meta = self.metaObject()
        self._token_received_method = meta.method(meta.indexOfSignal("token_received(PyObject)"))
        models.model_ready.connect(self._on_model_ready)
        models.load_failed.connect(self._on_load_failed)
        models.engine_stopped.connect(self._on_engine_stopped)

    @property
    def busy(self) -> bool:
        return self.state in (ReplyState.GENERATING, ReplyState.STOPPING)

    @property
    def awaiting_acceptance(self) -> bool:
        """A sent message is with the engine and not yet in the chat: the box holds it, read-only."""
        return self._pending_text is not None

    @property
    def queued_text(self) -> str | None:
        """A message waiting for the model to load (it is still in the message box)."""
        return self._queued_text if self.state == ReplyState.QUEUED else None

    # -- what the window asks -------------------------------------------------------------------

    def send(self, text: str) -> bool:
        """Ask for a reply to text; False when it cannot start now (the reason is signalled)."""
        if not text.strip() or not self._can_start():
            return False
        if self._models.ready is None:
            if not self._models.loading and not self._models.restart():
                self.status_posted.emit("No model is loaded; your message is kept.")
                return False
            self._queued_text = text
            self._set_state(ReplyState.QUEUED)
            self.status_posted.emit("The model is still loading; your message will be sent when it is ready.")
            return False
        self._pending_text = text
        return self._start()

    def regenerate(self) -> bool:
        session = self._chat.session
        if not session.can_regenerate() or not self._can_start() or self._models.ready is None:
            return False
        replaced = len(session.messages) - 1
        if session.drop_last_reply() is not None:
            # It leaves the chat's record as it leaves the views: reopened or exported, the chat has the new reply only.
            self._chat.records[:] = without_replaced(self._chat.records, replaced)
            self.last_reply_dropped.emit()
        return self._start()

    @Slot()
    def stop(self) -> None:
        """Stop at any phase: a queued message stays in the box; a reply ends at the next layer or token."""
        if self.state == ReplyState.QUEUED:
            self._queued_text = None
            self._set_state(ReplyState.IDLE)
            self.status_posted.emit("Not sent: the model had not finished loading. Your message is kept.")
        elif self.state == ReplyState.GENERATING:
            self._replying().trace.stop_requested_ns = time.perf_counter_ns()  # the waterfall's cancel segment
            self._models.client.stop(self._reply_id)
            self._set_state(ReplyState.STOPPING)
            self.status_posted.emit("Stopping…")

    def shutdown(self) -> None:
        self._closing = True
        if self.busy:
            self._models.client.stop(self._reply_id)

    def unsent_text(self) -> str | None:
        """Text the user sent that is not in the chat yet (queued, or not yet accepted): kept on close."""
        return self._pending_text if self._pending_text is not None else self.queued_text

    # -- the reply's life -----------------------------------------------------------------------

    def _can_start(self) -> bool:
        if self.busy or self.state == ReplyState.QUEUED:
            self.status_posted.emit(
                "A reply is still being generated; stop it first."
                if self.busy
                else "Your message is waiting for the model to load."
            )
            return False
        try:
            self._settings_source()
        except InvalidSettingsError as error:
            self.reply_refused.emit(f"Settings refused: {error}", True)
            return False
        return True

    def _start(self) -> bool:
        settings, system_prompt, streaming = self._settings_source()
        request_start_ns = time.perf_counter_ns()
        session = self._chat.session
        session.system_prompt = system_prompt
        messages = tuple((m.role, m.content) for m in session.messages)
        if self._pending_text is not None:
            messages += (("user", self._pending_text),)
        self.streaming = streaming
        self.record = ReplyRecord(
            ReplyTrace(request_start_ns, prompt_tokens=0),
            ReplyContext(streaming=streaming, settings=settings.to_dict()),
        )
        self._set_state(ReplyState.GENERATING)
        self._reply_id = self._models.client.start(
            ReplyJob(
                system_prompt,
                messages,
                settings,
                request_start_ns,
                ignore_eos=self.ignore_eos,
                streaming=streaming,
                chat_id=self._chat.current_chat_id,
            )
        )
        return True

    def _current(self, reply_id: int) -> bool:
        return not self._closing and self.busy and reply_id == self._reply_id

    @Slot(object)
    def _on_model_ready(self, _ready) -> None:
        if self.state == ReplyState.QUEUED and not self._closing:
            text, self._queued_text = self._queued_text, None
            self._set_state(ReplyState.IDLE)
            self.status_posted.emit("Model loaded; sending your message.")
            if text is not None:
                self.send(text)

    @Slot(str)
    def _on_load_failed(self, _message: str) -> None:
        if self.state == ReplyState.QUEUED:
            self._queued_text = None
            self._set_state(ReplyState.IDLE)

    @Slot(object)
    def _on_reply_events(self, batch: list[Delivered]) -> None:
        """The reply events of one read, in one place: the trace records them, and some move the reply on. Tokens are
        handed on together, and before any event that moves the reply on."""
        tokens: list[Delivered] = []
        for delivered in batch:
            message = delivered.event
            assert isinstance(message, (JobEvent, JobDone, JobFailed))  # the client hands on only a reply's messages
            if not self._current(message.job_id):
                continue
            if isinstance(message, JobDone):
                continue  # the reply ended with its own FinishedEvent or ReplyRefused, handled already
            event = ReplyRefused(message.message) if isinstance(message, JobFailed) else message.event
            if isinstance(event, TokenEvent):
                self._replying().trace.record(event, arrival_ns=delivered.arrival_ns)
                tokens.append(Delivered(event, delivered.arrival_ns))
                continue
            if tokens:
                self._hand_on(tokens)
                tokens = []
                if not self._current(message.job_id):
                    continue  # stopped and ended by whoever saw those tokens
            self._move_on(event, delivered.arrival_ns)
        if tokens:
            self._hand_on(tokens)

    def _hand_on(self, tokens: list[Delivered]) -> None:
        self.tokens_received.emit(tokens)
        if self.isSignalConnected(self._token_received_method):
            for token in tokens:
                self.token_received.emit(token)

    def _move_on(self, event, arrival_ns: int) -> None:
        """An event of the current reply other than a token."""
        if isinstance(event, ReplyRefused):
            self._refuse(event.message)
            return
        if isinstance(event, FinishedEvent):
            if event.error and event.error.startswith("interrupted"):
                self._mark_interrupted()  # a stream cut mid-reply: kept, marked as such
            self._finish(event)
            return
        self._replying().trace.record(event, arrival_ns=arrival_ns)
        if isinstance(event, PromptReady):
            self._accept(event)
        elif isinstance(event, PrefillProgress):
            self.prefill_progressed.emit(event)

    def _accept(self, ready: PromptReady) -> None:
        """The prompt fits: only now does the message move from the box into the chat."""
        if self._pending_text is not None:
            session = self._chat.session
            session.add_user(self._pending_text)
            self.message_accepted.emit(self._pending_text, len(session.messages) - 1)
            self._pending_text = None
        record = self._replying()
        record.context = replace(record.context, decode_loop=ready.decode_loop, notice=ready.notice)
        if ready.notice:
            self.status_posted.emit(ready.notice)
        self.reply_started.emit(self.record)

    @Slot(str)
    def _on_engine_stopped(self, description: str) -> None:
        """The engine died mid-reply: keep what arrived, marked interrupted; the next message restarts it."""
        if self._closing:
            return
        if self.state == ReplyState.QUEUED:
            self._queued_text = None
            self._set_state(ReplyState.IDLE)
        if not self.busy:
            return
        if self._pending_text is not None:  # it never started: the message goes back to the box
            self._refuse(f"the engine stopped before the reply began ({description}).")
            return
        self._mark_interrupted()
        self._finish(
            FinishedEvent(
                StopReason.ERROR,
                self._replying().trace.output_tokens,
                time.perf_counter_ns(),
                error=f"interrupted: {description}",
            )
        )

    def _replying(self) -> ReplyRecord:
        """The record of the reply under way: there is one whenever its events arrive or it is stopped."""
        assert self.record is not None
        return self.record

    def _mark_interrupted(self) -> None:
        record = self._replying()
        record.context = replace(record.context, interrupted=True)

    def _finish(self, event: FinishedEvent) -> None:
        record = self._replying()
        record.trace.record(event)
        session = self._chat.session
        after_message = len(session.messages) - 1
        message_index = None
        if record.trace.text or record.trace.output_tokens:
            session.add_assistant(record.trace.text)
            message_index = len(session.messages) - 1
        ready = self._models.ready
        record.context = replace(
            record.context,
            message_index=message_index,
            after_message=after_message,
            model=ready.name if ready else record.context.model,
        )
        self._chat.records.append(record)
        self._set_state(ReplyState.IDLE)
        self.reply_finished.emit(record)

    def _refuse(self, message: str) -> None:
        kept = self._pending_text is not None
        self._pending_text = None
        self.record = None
        self._set_state(ReplyState.IDLE)
        self.reply_refused.emit(f"Message refused: {message}", kept)

    def _set_state(self, state: ReplyState) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)
