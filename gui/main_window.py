"""The chat window: transcript and controls on the left, the live latency meter on the right, composed of its parts.

The parts do the work: ReplyController (the reply state machine), ModelController (loading),
SavedChats (the open chat and the saved ones), MeterPanel and TranscriptView (what is shown).
This file lays them out and wires their signals.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QCloseEvent, QGuiApplication
from PySide6.QtWidgets import QMainWindow, QSplitter, QTabWidget

from core.chats.record import ChatRecord, ReplyRecord
from core.chats.store import ChatStore
from core.engine.messages import ModelReady
from core.errors import InvalidSettingsError
from core.timing.budget import budget_document
from core.timing.export import traces_to_csv, traces_to_json, write_text_file
from gui.chat.chat_panel import ChatPanel
from gui.chat.live_reply import LiveReply
from gui.chat.reply_controller import ReplyController, ReplyState
from gui.chats.chat_replay import replay_chat
from gui.chats.saved_chats import SavedChats
from gui.elided_line import ElidedLine
from gui.gui_thread_gc import GuiThreadCollector
from gui.lab.lab_tab import LabTab
from gui.menus import build_menus
from gui.meter.budget_line import BudgetDialog
from gui.meter.meter_panel import MeterPanel
from gui.model.model_controller import ModelController
from gui.model.server_choices import plain_http_warning, served_model_specs
from gui.png_file import save_png
from gui.replay.replay_dialog import ReplayDialog, open_replay
from gui.settings.budget_store import BudgetKeeper
from gui.settings.check import apply_chat_settings, check_window_settings
from gui.settings.store import load_window_settings, save_window_settings
from gui.traffic.traffic_tab import TrafficTab
from gui.vertical_scroll import VerticalScroll
from gui.window_size import fit_to_screen

CLOSE_WAIT_MS = 1000  # then the engine is killed: closing ends the whole app within 2 s
CLOSE_SAVE_WAIT_S = 0.4


class MainWindow(QMainWindow):
    reply_finished = Signal(object)  # ReplyTrace once the window shows the whole reply, None if refused
    model_ready = Signal(object)  # messages.ModelReady: the loaded model's facts
    model_failed = Signal(str)

    def __init__(
        self,
        overrides: dict | None = None,
        trust_remote_code: bool = False,
        allow_pickle: bool = False,
        chat_store: ChatStore | None = None,
        engine_factory=None,
    ):
        super().__init__()
        self.setWindowTitle("Latency Lab")
        fit_to_screen(self)
        self.window_settings = load_window_settings()
        problems = check_window_settings(self.window_settings)
        for name, value in (overrides or {}).items():  # flags given on the command line win for this launch
            setattr(self.window_settings, name, value)
        # ...over the chat reopened at launch too; a chat the user opens later brings its own settings.
        self._launch_flags = frozenset(overrides or ())
        self._closing = False
        self._warned_hosts: set[str] = set()
        self.ui_probe: object | None = None  # --profile-ui's probe (gui/ui_probe.py), kept alive with the window
        self.collector = GuiThreadCollector(self)
        self.collector.start()
        # The engine starts now, before the first paint: it imports torch while the window shows.
        self.models = ModelController(engine_factory, trust_remote_code, allow_pickle, parent=self)
        self._build_widgets()
        self.saved_chats = SavedChats(
            self.window_settings.system_prompt,
            busy=lambda: self.replies.busy,
            chat_settings=self._chat_settings,
            model_name=lambda: self.ready.name if self.ready else None,
            notify=self.notify,
            store=chat_store,
            parent=self,
        )
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.saved_chats.dock)
        self.replies = ReplyController(self.saved_chats, self.models, self._reply_settings, self)
        self.collector.busy = lambda: self.replies.busy  # no full collection while a reply streams
        panel = self.chat_panel
        self.live = LiveReply(
            self.replies,
            self.models.client,
            self.chat_panel.transcript,
            self.meter,
            panel.indicator,
            panel.prefill_bar,
            self,
        )
        self.frame_timer = self.live.frame_timer
        self.budget_keeper = BudgetKeeper(self)  # the chat's and the race's latency budget (SLOs)
        self.meter.set_budget(self.budget_keeper.budget)
        self.race_window = None  # gui.race.race_window.RaceWindow, made when first opened
        build_menus(self)
        self._wire()
        self.saved_chats.restore()
        self._launch_flags = frozenset()
        for problem in problems:
            self.notify(problem)
        risky = [
            text
            for text, on in (
                ("trust_remote_code is on (model folders may run their own code)", trust_remote_code),
                ("pickle checkpoints are allowed (they can run code when loaded)", allow_pickle),
            )
            if on
        ]
        if risky:
            self.notify("Security: " + " and ".join(risky) + ".")
        self._update_controls()
        self.chat_panel.input_box.setFocus()

    # -- construction ---------------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.chat_panel = ChatPanel(self.window_settings)
        panel = self.chat_panel
        self.meter = MeterPanel()
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(panel)
        # The meter scrolls rather than sets the window's least height: its cards and plots need about 770 pixels,
        # more than a 768-pixel laptop screen leaves a window.
        splitter.addWidget(VerticalScroll(self.meter))
        splitter.setSizes([620, 660])
        settings_panel = panel.settings_panel
        self.lab_tab = LabTab(
            self.models.client, server_access=lambda: (settings_panel.server_key, settings_panel.server_timeout_s)
        )
        self.tabs = QTabWidget()
        self.tabs.addTab(splitter, "Chat")
        self.tabs.addTab(self.lab_tab, "Lab")
        self.traffic_tab = TrafficTab(self.window_settings.proxy_upstream, self.window_settings.proxy_port)
        self.tabs.addTab(self.traffic_tab, "Traffic")
        self.setCentralWidget(self.tabs)
        # Cut with '…' where the window is narrower than the line (it was cut mid-word at the right edge).
        self.model_label = ElidedLine()
        self.model_label.setText("no model loaded")
        self.statusBar().addPermanentWidget(self.model_label, 1)

    def _wire(self) -> None:
        self.chat_panel.input_box.submitted.connect(self.send_message)
        panel = self.chat_panel
        panel.send_button.clicked.connect(self.send_message)
        panel.stop_button.clicked.connect(self.stop_generation)
        panel.regenerate_button.clicked.connect(self.regenerate)
        panel.new_chat_button.clicked.connect(self.new_chat)
        panel.streaming_toggle.toggled.connect(self._on_toggled)
        panel.cache_toggle.toggled.connect(self._on_toggled)
        self.chat_panel.transcript.copy_requested.connect(self.copy_reply)
        self.chat_panel.settings_panel.load_requested.connect(self._on_load_requested)
        self.chat_panel.settings_panel.fold_changed.connect(self._on_toggled)  # saved at once, as the switches are
        self.chat_panel.settings_panel.decode_loop_box.currentTextChanged.connect(self._show_model_facts)
        replies = self.replies
        replies.state_changed.connect(self._on_reply_state)
        replies.message_accepted.connect(self._on_message_accepted)
        replies.reply_started.connect(self._on_reply_started)
        replies.reply_finished.connect(self._on_reply_finished)
        replies.reply_refused.connect(self._on_reply_refused)
        replies.last_reply_dropped.connect(self.chat_panel.transcript.remove_last_reply)
        replies.last_reply_dropped.connect(self.meter.forget_last_reply)
        replies.status_posted.connect(self._show_status)
        self.models.load_progressed.connect(self.chat_panel.settings_panel.show_progress)
        self.models.model_ready.connect(self._on_model_ready)
        self.models.load_failed.connect(self._on_model_failed)
        self.models.engine_stopped.connect(self._on_engine_stopped)
        self.budget_keeper.changed.connect(self.meter.set_budget)
        self.meter.budget_line.change_requested.connect(self.edit_budget)
        self.lab_tab.run_finished.connect(self._on_lab_finished)
        self.saved_chats.chat_opened.connect(self._on_chat_opened)
        self.chat_panel.settings_panel.system_prompt.textChanged.connect(self._on_system_prompt_edited)
        self.saved_chats.chat_cleared.connect(self._on_chat_cleared)
        self.saved_chats.status_posted.connect(self._show_status)
        max_new_tokens = self.chat_panel.settings_panel.max_new_tokens
        max_new_tokens.valueChanged.connect(self.meter.size_for_budget)
        self.meter.size_for_budget(max_new_tokens.value())

    # -- public actions -------------------------------------------------------------------------

    @property
    def session(self):
        return self.saved_chats.session

    @property
    def ready(self) -> ModelReady | None:
        """The loaded model's facts, as the engine last announced them; None before the first load."""
        return self.models.ready

    @property
    def generating(self) -> bool:
        return self.replies.busy

    def start_loading(self, spec: str | None = None, dtype: str | None = None) -> None:
        self._on_load_requested(
            spec or self.chat_panel.settings_panel.model_spec(), dtype or self.chat_panel.settings_panel.dtype()
        )

    @Slot()
    def send_message(self) -> None:
        """The message stays in the box until the engine has built its prompt: a refused one is never lost."""
        self.replies.send(self.chat_panel.input_box.message_text())

    @Slot()
    def stop_generation(self) -> None:
        self.replies.stop()

    @Slot()
    def regenerate(self) -> None:
        self.replies.regenerate()

    @Slot()
    def new_chat(self) -> None:
        if self.replies.busy:
            self._show_status("Stop the reply before starting a new chat.")
            return
        self.saved_chats.save()
        self.saved_chats.clear_to_new_chat()
        self._update_controls()
        self.chat_panel.input_box.setFocus()

    @Slot(int)
    def copy_reply(self, message_index: int) -> None:
        if 0 <= message_index < len(self.session.messages):
            QGuiApplication.clipboard().setText(self.session.messages[message_index].content)
            self._show_status("Copied to the clipboard.")

    def export_traces_json(self, path: str | Path) -> None:
        records = self.saved_chats.records
        budget, marks = budget_document(
            [r.trace for r in records],
            [r.context.streamed for r in records],
            self.budget_keeper.budget,
        )
        write_text_file(
            path,
            traces_to_json(
                [r.trace for r in records],
                context={"model": self.ready.facts.to_dict() if self.ready else None, "budget": budget},
                per_trace_context=[{**r.context.to_dict(), "budget": mark} for r, mark in zip(records, marks)],
            ),
        )

    def export_traces_csv(self, path: str | Path) -> None:
        write_text_file(path, traces_to_csv([record.trace for record in self.saved_chats.records]))

    def open_replay(self, path: str | Path):
        """Replay an exported JSON trace in its own REPLAY window (None, with a notice, for a bad file)."""
        return open_replay(self, path)

    @Slot()
    def open_race(self):
        """The race window, set up from this chat (Chat → Race…)."""
        from gui.race.launch import open_race

        return open_race(self)

    @Slot()
    def edit_budget(self) -> None:
        dialog = BudgetDialog(self.budget_keeper.budget, self)
        if dialog.exec():
            self.budget_keeper.set_budget(dialog.form.budget())

    def export_plots_png(self, path: str | Path) -> bool:
        return save_png(self.meter.picture(), path)

    def notify(self, message: str, is_error: bool = False) -> None:
        """Shown in the chat, where it stays, and in the status bar."""
        self.chat_panel.transcript.add_notice(message, is_error=is_error)
        self.statusBar().showMessage(message, 10000)

    # -- a reply, as the controller reports it ---------------------------------------------------

    @Slot(object)
    def _on_reply_state(self, _state: ReplyState) -> None:
        self.chat_panel.input_box.setReadOnly(self.replies.awaiting_acceptance)
        self._update_controls()

    @Slot(str, int)
    def _on_message_accepted(self, text: str, index: int) -> None:
        self.chat_panel.transcript.add_user_turn(text, index)
        self.chat_panel.input_box.clear()
        self.chat_panel.input_box.setReadOnly(False)

    @Slot(object)
    def _on_reply_started(self, _record: ReplyRecord) -> None:
        self.saved_chats.save()  # marked as pending: a crash from here on keeps the message, not half a reply

    @Slot(object)
    def _on_reply_finished(self, record: ReplyRecord) -> None:
        self.live.finish(record)
        self.saved_chats.save()
        self.reply_finished.emit(record.trace)

    @Slot(str, bool)
    def _on_reply_refused(self, message: str, kept: bool) -> None:
        self.notify(message + (" Your message is still in the box below." if kept else ""), is_error=True)
        self.reply_finished.emit(None)

    def _update_controls(self) -> None:
        busy = self.replies.busy
        panel = self.chat_panel
        panel.send_button.setEnabled(not busy)
        panel.stop_button.setEnabled(busy or self.replies.state is ReplyState.QUEUED)
        panel.regenerate_button.setEnabled(not busy and self.session.can_regenerate())
        panel.new_chat_button.setEnabled(not busy)
        self.chat_panel.settings_panel.set_loading(self.models.loading or busy)

    @Slot(str)
    def _show_status(self, message: str) -> None:
        self.statusBar().showMessage(message, 6000)

    def _reply_settings(self) -> tuple:
        panel = self.chat_panel
        settings = replace(panel.settings_panel.generation_settings(), prompt_cache=panel.cache_toggle.isChecked())
        return settings, panel.settings_panel.system_prompt.toPlainText(), panel.streaming_toggle.isChecked()

    # -- the open chat, as SavedChats reports it ------------------------------------------------

    @Slot(object)
    def _on_chat_opened(self, record: ChatRecord) -> None:
        """A saved chat reopened: its system prompt and settings in the panel, its replies drawn again."""
        self.chat_panel.settings_panel.system_prompt.setPlainText(record.system_prompt)
        replay_chat(record, self.chat_panel.transcript, self.meter)
        saved = {name: value for name, value in record.settings.items() if name not in self._launch_flags}
        for problem in apply_chat_settings(self.chat_panel.settings_panel, saved):
            self.notify(problem, is_error=True)

    @Slot()
    def _on_system_prompt_edited(self) -> None:
        """The open chat's system prompt is what the box shows, sent or not: saved with the chat, it was lost at a
        relaunch when typed after the chat's last message (the reopened chat put its old one back)."""
        self.session.system_prompt = self.chat_panel.settings_panel.system_prompt.toPlainText()

    @Slot()
    def _on_chat_cleared(self) -> None:
        self.chat_panel.transcript.clear_transcript()
        self.meter.reset_chat()

    def _chat_settings(self) -> dict:
        """The settings saved with the chat: the form's (none while it holds a bad value) and the streaming switch."""
        try:
            settings = self.chat_panel.settings_panel.generation_settings().to_dict()
        except InvalidSettingsError:
            settings = {}
        return {**settings, "streaming": self.chat_panel.streaming_toggle.isChecked()}

    # -- the model ------------------------------------------------------------------------------

    @Slot(str, str)
    def _on_load_requested(self, spec: str, dtype: str) -> None:
        if self.replies.busy:
            message = "Stop the reply before switching models; the current model stays loaded."
            self.chat_panel.settings_panel.show_load_error(message)
            self._show_status(message)
        elif self.models.load(
            spec, dtype, self.chat_panel.settings_panel.server_key, self.chat_panel.settings_panel.server_timeout_s
        ):
            self._warn_about_plain_http(spec)
            self.chat_panel.settings_panel.show_progress(0.0, f"loading {spec}…")
            self._update_controls()

    def _warn_about_plain_http(self, spec: str) -> None:
        """Once per host and session: prompts to another machine over http:// cross the network in the clear."""
        warning, host = plain_http_warning(spec)
        if warning and host not in self._warned_hosts:
            self._warned_hosts.add(host)
            self.notify(warning, is_error=True)

    @Slot(object)
    def _on_model_ready(self, ready: ModelReady) -> None:
        self.meter.set_model_facts(ready.facts)
        if ready.facts.remote:
            self.chat_panel.settings_panel.offer_served_models(served_model_specs(ready.facts))
        self._show_model_facts()
        if ready.facts.notice:
            self.notify(ready.facts.notice)
        self.chat_panel.settings_panel.show_progress(1.0, f"Loaded {ready.name}.")
        self._update_controls()
        self.model_ready.emit(ready)

    @Slot(object)
    def _on_lab_finished(self, results) -> None:
        """Ceilings the Lab measured place the next replies on the cards' tooltips too."""
        if results is not None:
            self.meter.set_ceilings(results.ceilings)

    @Slot()
    def _show_model_facts(self) -> None:
        line, tooltip = self.models.facts(self.chat_panel.settings_panel.decode_loop_box.currentText())
        self.model_label.setText(line)
        self.model_label.set_tooltip_after(tooltip)

    @Slot()
    def restart_engine(self) -> None:
        """Works in every state: a running, stuck or stopped engine is replaced by a new one with the same model."""
        if self.models.restart(force=True):
            self.chat_panel.settings_panel.show_progress(0.0, "restarting the engine…")
            self._update_controls()

    @Slot(str)
    def _on_engine_stopped(self, description: str) -> None:
        self.notify(
            f"The engine stopped: {description}. The chat is kept; your next message (or Chat → "
            f"Restart engine) starts a new one with the same model.",
            is_error=True,
        )
        self._show_model_facts()
        self._update_controls()

    @Slot(str)
    def _on_model_failed(self, message: str) -> None:
        kept = f" Still using {self.ready.name}." if self.ready else ""
        self.chat_panel.settings_panel.show_load_error(f"Could not load the model: {message}{kept}")
        self._update_controls()
        self.model_failed.emit(message)

    # -- settings, export and shutdown ----------------------------------------------------------

    @Slot(bool)
    def _on_toggled(self, _checked: bool) -> None:
        problem = save_window_settings(self._window_settings())
        if problem:
            self._show_status(problem[0].upper() + problem[1:] + ".")

    def _window_settings(self):
        panel = self.chat_panel
        settings = panel.settings_panel.collect(panel.streaming_toggle.isChecked(), panel.cache_toggle.isChecked())
        settings.proxy_upstream = self.traffic_tab.upstream_edit.text().strip()
        settings.proxy_port = self.traffic_tab.port_box.value()
        return settings

    def shutdown(self) -> None:
        """Stop the reply and the lab, then end the engine: asked to exit, killed if it has not within the wait."""
        self.live.stop()
        self.lab_tab.shutdown()
        self.traffic_tab.shutdown()
        self.replies.shutdown()
        self.models.shutdown(CLOSE_WAIT_MS)
        self.collector.stop()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if not self._closing:
            self._closing = True
            for replay in self.findChildren(ReplayDialog):
                replay.close()
            if self.race_window is not None:
                self.race_window.close()  # stops its clock and the race in the engine
            problem = save_window_settings(self._window_settings())
            if problem:  # the window is going: the terminal is the one place left to say so
                print(f"latencylab: {problem}.", file=sys.stderr)
            unsent = self.replies.unsent_text()
            if unsent is not None:  # sent (or queued behind the load), but not yet in the chat: keep it
                self.session.add_user(unsent)
            # A reply still running is saved as interrupted: the message stays, no half reply.
            self.saved_chats.save(pending=self.replies.busy or unsent is not None)
            self.shutdown()
            self.saved_chats.close(CLOSE_SAVE_WAIT_S)
        super().closeEvent(event)
