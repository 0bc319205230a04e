"""The window's menus and shortcuts: File (chats, traces and plots in and out), Chat (stop, regenerate, ...) and View
(how the transcript shows a reply)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog

from gui.export_dialog import export_with_dialog
from gui.replay.replay_dialog import replay_this_chat


def build_menus(window) -> None:
    def export(title: str, pattern: str, writer):
        return lambda: export_with_dialog(window, title, pattern, writer, window.statusBar().showMessage)

    def replay() -> None:
        path, _ = QFileDialog.getOpenFileName(window, "Replay a trace", "", "Trace exports (*.json)")
        if path:
            window.open_replay(path)

    file_menu = window.menuBar().addMenu("&File")
    for label, handler in (
        ("E&xport chat…", window.saved_chats.export_dialog),
        ("&Import chat…", window.saved_chats.import_dialog),
        ("Export traces as &JSON…", export("Export traces", "JSON (*.json)", window.export_traces_json)),
        ("Export traces as &CSV…", export("Export traces", "CSV (*.csv)", window.export_traces_csv)),
        ("Export plots as &PNG…", export("Export plots", "PNG (*.png)", window.export_plots_png)),
        ("&Replay a trace…", replay),
        ("Replay &this chat", lambda: replay_this_chat(window)),
    ):
        action = QAction(label, window)
        action.triggered.connect(handler)
        file_menu.addAction(action)
    file_menu.addSeparator()
    quit_action = QAction("&Quit", window)
    quit_action.setShortcut(QKeySequence.StandardKey.Quit)
    quit_action.triggered.connect(window.close)
    file_menu.addAction(quit_action)
    chat_menu = window.menuBar().addMenu("&Chat")
    for label, shortcut, handler in (
        ("Stop", "Esc", window.stop_generation),
        ("Regenerate", "Ctrl+R", window.regenerate),
        ("New chat", "Ctrl+N", window.new_chat),
        ("Toggle streaming", "Ctrl+T", window.chat_panel.streaming_toggle.toggle),
        ("Toggle the prompt cache", "Ctrl+K", window.chat_panel.cache_toggle.toggle),
        ("Restart engine", "Ctrl+Shift+R", window.restart_engine),
        ("Race two settings…", "Ctrl+D", window.open_race),
        ("Latency budget…", "Ctrl+Shift+B", window.edit_budget),
    ):
        action = QAction(label, window)
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(handler)
        chat_menu.addAction(action)
        window.addAction(action)
    chat_menu.addSeparator()
    chat_menu.addAction(window.saved_chats.dock.toggleViewAction())
    view_menu = window.menuBar().addMenu("&View")
    view_menu.setToolTipsVisible(True)
    tint = window.chat_panel.transcript.tint_action
    tint.setShortcut(QKeySequence("Ctrl+Shift+T"))
    tint.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    view_menu.addAction(tint)
    window.addAction(tint)
