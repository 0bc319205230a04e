"""The reply state machine, free of widgets: idle, queued while the model loads, generating, stopping.

It owns each reply's request (with its stop event) and its record (trace and context), relays the
reply through a ReplyRelay on its own QThread, and tells the window what happened through signals.
The chat it answers in is the open chat (gui/chats/saved_chats.py): messages enter it only once
the reply has really started, so a refused message is never lost from the message box.
"""

from __future__ import annotations

import time
from typing import Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

from core.chats.record import ReplyRecord
from core.chats.session import Message
from core.errors import InvalidSettingsError
from core.generation.request import ReplyRequest
from core.timing.events import FinishedEvent, TokenEvent
from core.timing.trace import GenerationTrace
from gui.chat.reply_relay import GenerationStarted, RelayJob, ReplyRelay
from gui.thread_exit import end_thread

IDLE, QUEUED, GENERATING, STOPPING = "idle", "queued", "generating", "stopping"

# (settings, system prompt, streaming) for the next reply; raises InvalidSettingsError for a bad form.
SettingsSource = Callable[[], tuple]


class ReplyController(QObject):
    relay_requested = Signal(object)  # RelayJob, to the relay's thread
    state_changed = Signal(str)
    message_accepted = Signal(str, int)  # the user's text and its index: it left the box and joined the chat
    reply_started = Signal(object)       # ReplyRecord, whose trace fills as tokens arrive
    token_received = Signal(object)      # TokenEvent, already in the record's trace
    reply_finished = Signal(object)      # ReplyRecord, with the chat updated
    reply_refused = Signal(str, bool)    # why; whether the user's message is still in the box
    last_reply_dropped = Signal()        # Regenerate took the last reply out of the chat
    status_posted = Signal(str)          # a passing note for the status bar

    def __init__(self, chat, models, settings_source: SettingsSource, token_timeout_s: float | None = None,
                 parent=None):
        super().__init__(parent)
        self._chat = chat            # gui.chats.saved_chats.SavedChats: the open chat
        self._models = models        # gui.model.model_controller.ModelController
        self._settings_source = settings_source
        self.state = IDLE
        self.record: ReplyRecord | None = None
        self.streaming = True
        self.logits_processors: tuple = ()  # a seam for fault-injection tests
        self._request: ReplyRequest | None = None
        self._queued_text: str | None = None  # sent while the model loads; still in the box
        self._pending_text: str | None = None  # handed to the relay, not yet accepted into the chat
        self._closing = False
        self.relay_thread = QThread(self)
        self.relay_thread.setObjectName("latencylab-reply-relay")
        self.relay = ReplyRelay() if token_timeout_s is None else ReplyRelay(token_timeout_s)
        self.relay.moveToThread(self.relay_thread)
        self.relay_requested.connect(self.relay.relay)
        self.relay.started.connect(self._on_started)
        self.relay.token_received.connect(self._on_token)
        self.relay.finished.connect(self._on_finished)
        self.relay.failed.connect(self._on_refused)
        models.model_loaded.connect(self._on_model_loaded)
        models.load_failed.connect(self._on_load_failed)
        self.relay_thread.start()

    @property
    def busy(self) -> bool:
        return self.state in (GENERATING, STOPPING)

    @property
    def awaiting_acceptance(self) -> bool:
        """A sent message is with the relay and not yet in the chat: the box holds it, read-only."""
        return self._pending_text is not None

    @property
    def queued_text(self) -> str | None:
        """A message waiting for the model to load (it is still in the message box)."""
        return self._queued_text if self.state == QUEUED else None

    # -- what the window asks -------------------------------------------------------------------

    def send(self, text: str) -> bool:
        """Ask for a reply to text; False when it cannot start now (the reason is signalled)."""
        if not text.strip() or not self._can_start():
            return False
        if self._models.loaded is None:
            if not self._models.loading:
                self.status_posted.emit("No model is loaded; your message is kept.")
                return False
            self._queued_text = text
            self._set_state(QUEUED)
            self.status_posted.emit("The model is still loading; your message will be sent when it is ready.")
            return False
        self._pending_text = text
        return self._start()

    def regenerate(self) -> bool:
        session = self._chat.session
        if not session.can_regenerate() or not self._can_start() or self._models.loaded is None:
            return False
        if session.drop_last_reply() is not None:
            self.last_reply_dropped.emit()
        return self._start()

    @Slot()
    def stop(self) -> None:
        """Stop at any phase: a queued message stays in the box; a reply ends at the next layer or token."""
        if self.state == QUEUED:
            self._queued_text = None
            self._set_state(IDLE)
            self.status_posted.emit("Not sent: the model had not finished loading. Your message is kept.")
        elif self.state == GENERATING:
            self._request.stop.set()
            self._set_state(STOPPING)
            self.status_posted.emit("Stopping…")

    def shutdown(self, wait_ms: int) -> None:
        """Stop the reply and end the relay thread within wait_ms; a thread still busy is detached."""
        self._closing = True
        if self._request is not None:
            self._request.stop.set()
        end_thread(self.relay_thread, self.relay, wait_ms)

    def unsent_text(self) -> str | None:
        """Text the user sent that is not in the chat yet (queued, or not yet accepted): kept on close."""
        return self._pending_text if self._pending_text is not None else self.queued_text

    # -- the reply's life -----------------------------------------------------------------------

    def _can_start(self) -> bool:
        if self.busy or self.state == QUEUED:
            self.status_posted.emit("A reply is still being generated; stop it first." if self.busy
                                    else "Your message is waiting for the model to load.")
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
        new_message = () if self._pending_text is None else (Message("user", self._pending_text),)
        self._request = ReplyRequest(system_prompt, tuple(session.messages) + new_message, settings,
                                     request_start_ns, logits_processors=self.logits_processors)
        self.streaming = streaming
        self.record = ReplyRecord(GenerationTrace(request_start_ns, prompt_tokens=0),
                                  {"streaming": streaming, "settings": settings.to_dict()})
        self._set_state(GENERATING)
        self.relay_requested.emit(RelayJob(self._models.loaded, self._request))
        return True

    @Slot(object)
    def _on_model_loaded(self, _loaded) -> None:
        if self.state == QUEUED and not self._closing:
            text, self._queued_text = self._queued_text, None
            self._set_state(IDLE)
            self.status_posted.emit("Model loaded; sending your message.")
            self.send(text)

    @Slot(str)
    def _on_load_failed(self, _message: str) -> None:
        if self.state == QUEUED:
            self._queued_text = None
            self._set_state(IDLE)

    @Slot(object)
    def _on_started(self, info: GenerationStarted) -> None:
        """The prompt fits: only now does the message move from the box into the chat."""
        if self._closing:
            return
        if self._pending_text is not None:
            session = self._chat.session
            session.add_user(self._pending_text)
            self.message_accepted.emit(self._pending_text, len(session.messages) - 1)
            self._pending_text = None
        self.record.trace.prompt_tokens = info.prompt_tokens
        self.record.context.update(decode_loop=info.decode_loop, notice=info.notice)
        if info.notice:
            self.status_posted.emit(info.notice)
        self.reply_started.emit(self.record)

    @Slot(object)
    def _on_token(self, event: TokenEvent) -> None:
        if self._closing:
            return
        self.record.trace.record(event)
        self.token_received.emit(event)

    @Slot(object)
    def _on_finished(self, event: FinishedEvent) -> None:
        if self._closing:
            return
        record = self.record
        record.trace.record(event)
        session = self._chat.session
        after_message = len(session.messages) - 1
        message_index = None
        if record.trace.text or record.trace.output_tokens:
            session.add_assistant(record.trace.text)
            message_index = len(session.messages) - 1
        record.context.update(message_index=message_index, after_message=after_message,
                              model=self._models.loaded.name)
        self._chat.records.append(record)
        self._request = None
        self._set_state(IDLE)
        self.reply_finished.emit(record)

    @Slot(str)
    def _on_refused(self, message: str) -> None:
        """The relay refused the request before generating: a new message is still in the box."""
        if self._closing:
            return
        kept = self._pending_text is not None
        self._pending_text = None
        self._request = None
        self.record = None
        self._set_state(IDLE)
        self.reply_refused.emit(f"Message refused: {message}", kept)

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)
