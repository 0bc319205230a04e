"""The chat window: transcript and controls on the left, the live latency meter on the right."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QThread, QTimer, Qt, Signal, Slot
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox, QFileDialog, QHBoxLayout, QLabel, QMainWindow, QPushButton, QSplitter, QTabWidget, QVBoxLayout,
    QWidget,
)

from core.chats.session import ChatSession, Message
from core.chats.store import ChatStore
from core.errors import InvalidSettingsError
from core.timing.events import FinishedEvent, TokenEvent
from core.timing.export import traces_to_csv, traces_to_json, write_text_file
from core.model.loader import LoadedModel
from core.timing.trace import GenerationTrace
from gui.chats.chat_keeper import ChatKeeper
from gui.chats.chat_replay import reply_note
from gui.chat.generation_worker import GenerationRequest, GenerationStarted, GenerationWorker
from gui.chat.input_box import InputBox
from gui.meter.meter_panel import MeterPanel
from gui.model.loader_worker import LoadRequest, ModelLoader
from gui.chats.saved_chats import SavedChatsMixin
from gui.settings.check import check_window_settings
from gui.settings.panel import SettingsPanel
from gui.settings.store import load_window_settings, save_window_settings
from gui.lab.lab_tab import LabTab
from gui.thread_exit import end_thread
from gui.chat.transcript_view import TranscriptView
from gui.window_size import fit_to_screen

FRAME_INTERVAL_MS = 33  # about 30 Hz: smooth to the eye, and independent of the token rate
# Closing must finish within 2 s. Stopping a decode takes one token; a prefill or a model load cannot
# be interrupted, so a thread still busy after its share is detached (gui/thread_exit.py), not joined.
CLOSE_GENERATION_WAIT_MS = 1200
CLOSE_LOAD_WAIT_MS = 250
CLOSE_MIN_WAIT_MS = 50
CLOSE_SAVE_WAIT_S = 0.4


class MainWindow(SavedChatsMixin, QMainWindow):
    generation_requested = Signal(object)
    load_requested = Signal(object)
    reply_finished = Signal(object)  # GenerationTrace, after the window has shown the whole reply
    model_changed = Signal(object)   # LoadedModel
    model_failed = Signal(str)

    def __init__(self, initial_model: str | None = None, initial_dtype: str | None = None,
                 token_timeout_s: float | None = None, trust_remote_code: bool = False, allow_pickle: bool = False,
                 chat_store: ChatStore | None = None):
        super().__init__()
        self.setWindowTitle("Latency Lab")
        fit_to_screen(self)
        self.window_settings = load_window_settings()
        settings_problems = check_window_settings(self.window_settings)
        if initial_model:
            self.window_settings.model_spec = initial_model
        if initial_dtype:
            self.window_settings.dtype = initial_dtype
        self.session = ChatSession(system_prompt=self.window_settings.system_prompt)
        self.loaded: LoadedModel | None = None
        self.traces: list[GenerationTrace] = []
        self.trace_context: list[dict] = []
        self._trace: GenerationTrace | None = None
        self._pending_note: str | None = None
        self._streaming_this_reply = True
        self._visible_chars = 0
        self._generating = False
        self._loading = False
        self._send_when_loaded = False
        self._pending_user_text: str | None = None  # sent, but not yet accepted by the worker
        self._closing = False
        self.trust_remote_code = trust_remote_code
        self.allow_pickle = allow_pickle
        self.extra_logits_processors: tuple = ()  # a seam for fault-injection tests
        self.chats = ChatKeeper(chat_store, parent=self)
        self.chats.save_failed.connect(self._on_save_failed)

        self._build_widgets()
        self._build_actions()
        self._start_threads(token_timeout_s)
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_INTERVAL_MS)
        self.frame_timer.timeout.connect(self._on_frame)
        self._restore_chats()
        for problem in settings_problems:
            self._notify(problem)
        if trust_remote_code or allow_pickle:
            self._notify("Security: " + " and ".join(
                flag for flag, on in (("trust_remote_code is on (model folders may run their own code)",
                                       trust_remote_code),
                                      ("pickle checkpoints are allowed (they can run code when loaded)",
                                       allow_pickle)) if on) + ".")
        self._update_controls()
        self.input_box.setFocus()

    # -- construction ---------------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.settings_panel = SettingsPanel(self.window_settings)
        self.transcript = TranscriptView()
        self.indicator = QLabel("")
        self.indicator.setObjectName("generating_indicator")
        self.indicator.setStyleSheet("color: #8a5300; font-weight: 600;")
        self.indicator.setVisible(False)
        self.input_box = InputBox()
        self.input_box.setMaximumHeight(90)
        self.send_button = QPushButton("Send")
        self.stop_button = QPushButton("Stop (Esc)")
        self.regenerate_button = QPushButton("Regenerate")
        self.new_chat_button = QPushButton("New chat")
        self.streaming_toggle = QCheckBox("Streaming (Ctrl+T)")
        self.streaming_toggle.setChecked(self.window_settings.streaming)
        self.streaming_toggle.setStyleSheet("QCheckBox { font-weight: 700; }")
        self.streaming_toggle.setToolTip("On: text appears token by token, after TTFT. Off: the whole reply "
                                         "appears at once, after E2E. Tokens are timed either way.")
        buttons = QHBoxLayout()
        for button in (self.send_button, self.stop_button, self.regenerate_button, self.new_chat_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.streaming_toggle)

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(self.settings_panel)
        left_layout.addWidget(self.transcript, stretch=1)
        left_layout.addWidget(self.indicator)
        left_layout.addWidget(self.input_box)
        left_layout.addLayout(buttons)
        self.meter = MeterPanel()
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(self.meter)
        splitter.setSizes([620, 660])
        self.lab_tab = LabTab()
        self.tabs = QTabWidget()
        self.tabs.addTab(splitter, "Chat")
        self.tabs.addTab(self.lab_tab, "Lab")
        self.setCentralWidget(self.tabs)

        self._build_chat_dock()

        self.model_label = QLabel("no model loaded")
        self.statusBar().addPermanentWidget(self.model_label)

        self.input_box.submitted.connect(self.send_message)
        self.send_button.clicked.connect(self.send_message)
        self.stop_button.clicked.connect(self.stop_generation)
        self.regenerate_button.clicked.connect(self.regenerate)
        self.new_chat_button.clicked.connect(self.new_chat)
        self.streaming_toggle.toggled.connect(self._on_streaming_toggled)
        self.transcript.copy_requested.connect(self.copy_reply)
        self.settings_panel.load_requested.connect(self._on_load_requested)
        self.settings_panel.decode_loop_box.currentTextChanged.connect(self._show_model_facts)

    def _build_actions(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        for label, handler in (("E&xport chat…", self._export_current_chat_dialog),
                               ("&Import chat…", self._import_chat_dialog),
                               ("Export traces as &JSON…", self._export_json_dialog),
                               ("Export traces as &CSV…", self._export_csv_dialog),
                               ("Export plots as &PNG…", self._export_png_dialog)):
            action = QAction(label, self)
            action.triggered.connect(handler)
            file_menu.addAction(action)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)

        chat_menu = self.menuBar().addMenu("&Chat")
        for label, shortcut, handler in (("Stop", "Esc", self.stop_generation),
                                         ("Regenerate", "Ctrl+R", self.regenerate),
                                         ("New chat", "Ctrl+N", self.new_chat),
                                         ("Toggle streaming", "Ctrl+T", self.streaming_toggle.toggle)):
            action = QAction(label, self)
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(handler)
            chat_menu.addAction(action)
            self.addAction(action)
        chat_menu.addSeparator()
        chat_menu.addAction(self.chat_dock.toggleViewAction())

    def _start_threads(self, token_timeout_s: float | None) -> None:
        self.generation_thread = QThread(self)
        self.generation_thread.setObjectName("latencylab-generation")
        self.worker = GenerationWorker() if token_timeout_s is None else GenerationWorker(token_timeout_s)
        self.worker.moveToThread(self.generation_thread)
        self.generation_requested.connect(self.worker.generate)
        self.worker.started.connect(self._on_generation_started)
        self.worker.token_received.connect(self._on_token_received)
        self.worker.finished.connect(self._on_generation_finished)
        self.worker.failed.connect(self._on_generation_failed)
        self.generation_thread.start()

        self.load_thread = QThread(self)
        self.load_thread.setObjectName("latencylab-load")
        self.loader = ModelLoader()
        self.loader.moveToThread(self.load_thread)
        self.load_requested.connect(self.loader.load)
        self.loader.progress_changed.connect(self._on_load_progress)
        self.loader.loaded.connect(self._on_model_loaded)
        self.loader.failed.connect(self._on_model_failed)
        self.load_thread.start()

    # -- public actions -------------------------------------------------------------------------

    def start_loading(self, spec: str | None = None, dtype: str | None = None) -> None:
        self._on_load_requested(spec or self.settings_panel.model_spec(), dtype or self.settings_panel.dtype())

    @property
    def generating(self) -> bool:
        return self._generating

    @Slot()
    def send_message(self) -> None:
        """The message stays in the box until the worker has measured it: a refused one is never lost."""
        text = self.input_box.message_text()
        if not text.strip():
            return
        if not self._can_start_reply():
            return
        self._pending_user_text = text
        self.input_box.setReadOnly(True)
        self._start_reply()

    @Slot()
    def stop_generation(self) -> None:
        if self._generating:
            self.worker.stop()
            self.statusBar().showMessage("Stopping…", 2000)

    @Slot()
    def regenerate(self) -> None:
        if not self.session.can_regenerate() or not self._can_start_reply():
            return
        if self.session.drop_last_reply() is not None:
            self.transcript.remove_last_reply()
        self._start_reply()

    @Slot()
    def new_chat(self) -> None:
        if self._generating:
            self.statusBar().showMessage("Stop the reply before starting a new chat.", 4000)
            return
        self.save_chat()
        self._clear_to_new_chat()

    @Slot(int)
    def copy_reply(self, message_index: int) -> None:
        if 0 <= message_index < len(self.session.messages):
            QGuiApplication.clipboard().setText(self.session.messages[message_index].content)
            self.statusBar().showMessage("Copied to the clipboard.", 2000)

    def export_traces_json(self, path: str | Path) -> None:
        context = {"model": self.loaded.describe() if self.loaded else None}
        write_text_file(path, traces_to_json(self.traces, context=context, per_trace_context=self.trace_context))

    def export_traces_csv(self, path: str | Path) -> None:
        write_text_file(path, traces_to_csv(self.traces))

    def export_plots_png(self, path: str | Path) -> bool:
        return self.meter.grab().save(str(path), "PNG")

    # -- generation flow ------------------------------------------------------------------------

    def _can_start_reply(self) -> bool:
        if self._generating:
            self.statusBar().showMessage("A reply is still being generated; stop it first.", 3000)
            return False
        if self.loaded is None:
            self._send_when_loaded = self._loading
            self.statusBar().showMessage("The model is still loading; your message will be sent when it is ready."
                                         if self._loading else "No model is loaded; your message is kept.", 6000)
            return False
        try:
            self.settings_panel.generation_settings()
        except InvalidSettingsError as error:
            self._notify(f"Settings refused: {error}", is_error=True)
            return False
        return True

    def _start_reply(self) -> None:
        request_start_ns = time.perf_counter_ns()
        settings = self.settings_panel.generation_settings()
        self.session.system_prompt = self.settings_panel.system_prompt.toPlainText()
        self._streaming_this_reply = self.streaming_toggle.isChecked()
        self._visible_chars = 0
        self._pending_note = None
        self._trace = GenerationTrace(request_start_ns, prompt_tokens=0)
        self.trace_context.append({"streaming": self._streaming_this_reply, "settings": settings.to_dict()})
        self._generating = True
        self._update_controls()
        new_message = () if self._pending_user_text is None else (Message("user", self._pending_user_text),)
        self.generation_requested.emit(GenerationRequest(
            loaded=self.loaded,
            system_prompt=self.session.system_prompt,
            messages=tuple(self.session.messages) + new_message,
            settings=settings,
            request_start_ns=request_start_ns,
            logits_processors=self.extra_logits_processors,
        ))

    @Slot(object)
    def _on_generation_started(self, info: GenerationStarted) -> None:
        """The prompt fits: only now is the message moved from the box into the chat and saved."""
        if self._closing:
            return
        if self._pending_user_text is not None:
            self.session.add_user(self._pending_user_text)
            self.transcript.add_user_turn(self._pending_user_text, len(self.session.messages) - 1)
            self._pending_user_text = None
            self.input_box.clear()
            self.input_box.setReadOnly(False)
        self.save_chat()  # marked reply_pending: a crash from here on keeps the message, not half a reply
        self._trace.prompt_tokens = info.prompt_tokens
        self._pending_note = info.notice
        self.trace_context[-1]["decode_loop"] = info.decode_loop
        if info.notice:
            self.statusBar().showMessage(info.notice, 8000)
        self.transcript.begin_assistant_turn()
        self.meter.begin_reply(info.request_start_ns)
        self._update_indicator(time.perf_counter_ns())
        self.indicator.setVisible(not self._streaming_this_reply)
        self.frame_timer.start()

    @Slot(object)
    def _on_token_received(self, event: TokenEvent) -> None:
        if self._closing:
            return
        self._trace.record(event)
        self.meter.record_token(event)
        if self._streaming_this_reply and event.text:
            self.transcript.append_reply_text(event.text)
            self._visible_chars += len(event.text)
            self.meter.show_visible_text(time.perf_counter_ns(), self._visible_chars)

    @Slot(object)
    def _on_generation_finished(self, event: FinishedEvent) -> None:
        if self._closing:
            return
        trace = self._trace
        trace.record(event)
        text = trace.text
        message_index = None
        after_message = len(self.session.messages) - 1
        if text or trace.output_tokens:
            self.session.add_assistant(text)
            message_index = len(self.session.messages) - 1
        self.trace_context[-1].update(message_index=message_index, after_message=after_message,
                                      notice=self._pending_note, model=self.loaded.name)
        self.transcript.finish_assistant_turn(text, message_index, reply_note(trace, self._pending_note))
        self.meter.show_visible_text(time.perf_counter_ns(), len(text))
        self._end_reply()
        self.traces.append(trace)
        self.meter.finish_reply(trace, self._streaming_this_reply)
        self.save_chat()
        self.reply_finished.emit(trace)

    @Slot(str)
    def _on_generation_failed(self, message: str) -> None:
        """The worker refused the request before generating: the message, if new, is still in the box."""
        if self._closing:
            return
        kept = self._pending_user_text is not None
        self._pending_user_text = None
        self.input_box.setReadOnly(False)
        self.trace_context.pop()
        self._end_reply()
        self._notify(f"Message refused: {message}" + (" Your message is still in the box below." if kept else ""),
                     is_error=True)
        self.reply_finished.emit(None)

    def _end_reply(self) -> None:
        self._generating = False
        self.frame_timer.stop()
        self.indicator.setVisible(False)
        self._update_controls()

    @Slot()
    def _on_frame(self) -> None:
        now_ns = time.perf_counter_ns()
        trace = self._trace
        self.meter.tick(now_ns, trace.summary() if trace and trace.output_tokens else None,
                        self._streaming_this_reply)
        if trace:
            self._update_indicator(now_ns)

    def _update_indicator(self, now_ns: int) -> None:
        trace = self._trace
        elapsed = (now_ns - trace.request_start_ns) / 1e9 if trace else 0.0
        tokens = trace.output_tokens if trace else 0
        self.indicator.setText(f"generating… {tokens} tokens, {elapsed:.1f} s")

    def _update_controls(self) -> None:
        busy = self._generating
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.regenerate_button.setEnabled(not busy and self.session.can_regenerate())
        self.new_chat_button.setEnabled(not busy)
        self.settings_panel.set_loading(self._loading or busy)

    # -- model loading --------------------------------------------------------------------------

    @Slot(str, str)
    def _on_load_requested(self, spec: str, dtype: str) -> None:
        if self._generating:
            message = "Stop the reply before switching models; the current model stays loaded."
            self.settings_panel.show_load_error(message)
            self.statusBar().showMessage(message, 6000)
            return
        if self._loading:
            return
        self._loading = True
        self._update_controls()
        self.settings_panel.show_progress(0.0, f"loading {spec}…")
        self.load_requested.emit(LoadRequest(None if spec == "embedded" else spec, dtype,
                                             trust_remote_code=self.trust_remote_code, allow_pickle=self.allow_pickle))

    @Slot(float, str)
    def _on_load_progress(self, fraction: float, message: str) -> None:
        if not self._closing:
            self.settings_panel.show_progress(fraction, message)

    @Slot(object)
    def _on_model_loaded(self, loaded: LoadedModel) -> None:
        if self._closing:
            return
        self._loading = False
        self.loaded = loaded
        self._show_model_facts()
        self.settings_panel.show_progress(1.0, f"Loaded {loaded.name}.")
        self._update_controls()
        self.model_changed.emit(loaded)
        if self._send_when_loaded:
            self._send_when_loaded = False
            # Replaces "still loading; your message will be sent", which would otherwise outlive the reply.
            self.statusBar().showMessage("Model loaded; sending your message.", 4000)
            self.send_message()

    @Slot()
    def _show_model_facts(self) -> None:
        """The status bar's model line, with the decode loop replies will run on (see core/decode)."""
        if self.loaded is None:
            return
        from core.generation.decode.choice import loop_for

        facts = self.loaded.describe()
        loop, why_not_lean = loop_for(self.loaded.model, self.settings_panel.decode_loop_box.currentText())
        self.model_label.setText(
            f"{facts['model']} · {facts['parameters'] / 1e6:.0f}M params · {facts['dtype']} · "
            f"{facts['weight_bytes'] / 1e6:.0f} MB weights · {facts['device']} · "
            + ("lean decode loop" if loop == "lean" else "generate() loop")
        )
        self.model_label.setToolTip(f"Falls back to generate(): {why_not_lean}." if why_not_lean else "")

    @Slot(str)
    def _on_model_failed(self, message: str) -> None:
        if self._closing:
            return
        self._loading = False
        kept = f" Still using {self.loaded.name}." if self.loaded else ""
        self.settings_panel.show_load_error(f"Could not load the model: {message}{kept}")
        self._update_controls()
        self.model_failed.emit(message)

    # -- settings, export dialogs and shutdown --------------------------------------------------

    @Slot(str)
    def _on_save_failed(self, message: str) -> None:
        """Emitted on the chat saver's thread; a @Slot on this window, so it arrives queued on the GUI thread."""
        if not self._closing:
            self._notify(message, is_error=True)

    @Slot(bool)
    def _on_streaming_toggled(self, checked: bool) -> None:
        self.window_settings.streaming = checked
        save_window_settings(self.settings_panel.collect(checked))

    def _export_dialog(self, title: str, pattern: str, writer) -> None:
        path, _ = QFileDialog.getSaveFileName(self, title, "", pattern)
        if path:
            try:
                writer(path)
                self.statusBar().showMessage(f"Saved {Path(path).name}.", 3000)
            except OSError as error:
                self.statusBar().showMessage(f"Could not save: {error}", 6000)

    @Slot()
    def _export_json_dialog(self) -> None:
        self._export_dialog("Export traces", "JSON (*.json)", self.export_traces_json)

    @Slot()
    def _export_csv_dialog(self) -> None:
        self._export_dialog("Export traces", "CSV (*.csv)", self.export_traces_csv)

    @Slot()
    def _export_png_dialog(self) -> None:
        self._export_dialog("Export plots", "PNG (*.png)", self.export_plots_png)

    def shutdown(self, generation_wait_ms: int = CLOSE_GENERATION_WAIT_MS,
                 load_wait_ms: int = CLOSE_LOAD_WAIT_MS) -> None:
        """Stop any reply and lab run, then end the worker threads within one shared deadline.

        Everything is told to stop first, so the threads wind down together; a thread still busy
        when its share of the deadline is spent is detached, not joined.
        """
        self.frame_timer.stop()
        self.worker.stop()
        self.load_thread.quit()
        self.lab_tab.cancel()
        deadline = time.monotonic() + generation_wait_ms / 1000

        def remaining_ms(cap_ms: float = generation_wait_ms) -> int:
            # An idle thread still needs a moment to process its quit, hence the small floor.
            return int(max(CLOSE_MIN_WAIT_MS, min(cap_ms, (deadline - time.monotonic()) * 1000)))

        # Once this thread has ended, its reply's model.generate has returned too (the worker joins it).
        end_thread(self.generation_thread, self.worker, remaining_ms())
        end_thread(self.load_thread, self.loader, min(load_wait_ms, remaining_ms()))
        # A lab measurement stops within one decode step; one in a long prefill is detached instead.
        end_thread(self.lab_tab.lab_thread, self.lab_tab.worker, remaining_ms())

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if not self._closing:
            self._closing = True
            save_window_settings(self.settings_panel.collect(self.streaming_toggle.isChecked()))
            if self._pending_user_text is not None:  # sent, but the worker had not answered yet
                self.session.add_user(self._pending_user_text)
                self._pending_user_text = None
            self.save_chat()  # a reply still running is saved as interrupted: the message stays, no half reply
            self.shutdown()
            self.chats.close(CLOSE_SAVE_WAIT_S)
        super().closeEvent(event)

