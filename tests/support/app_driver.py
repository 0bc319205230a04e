"""Runs the real app (cli.main with no command) and acts on it from inside, for the process-level tests.

usage: python app_driver.py MODE [MS]
  close-after MS  close the window MS milliseconds after launch (mid-load when the model cache is empty)
  close-mid-reply close the window once the second reply has streamed a few tokens
  kill-mid-reply  print STREAMING once the second reply has streamed a few tokens, then wait to be killed
  inspect         print what the relaunched window shows, then close it
  engine-report   after the first reply, print the engine's pid and whether this (the window's) process
                  imported torch or transformers, then wait to be killed
  shown           print SHOWN once the window is up, then wait (for a Ctrl+C)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtWidgets import QApplication


class Driver(QObject):
    def __init__(self, mode: str, delay_ms: int):
        super().__init__()
        self.mode = mode
        self.delay_ms = delay_ms
        self.window = None
        self.replies = 0

    @Slot()
    def attach(self) -> None:
        from gui.main_window import MainWindow

        self.window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))
        if self.mode == "close-after":
            QTimer.singleShot(self.delay_ms, self.close_window)
        elif self.mode == "inspect":
            QTimer.singleShot(0, self.inspect)
        elif self.mode == "shown":
            print("SHOWN", flush=True)
        else:
            self.window.model_ready.connect(self.first_question)
            self.window.reply_finished.connect(self.next_step)
            self.window.replies.token_received.connect(self.on_token)

    @Slot(object)
    def first_question(self, _loaded) -> None:
        self.window.chat_panel.settings_panel.max_new_tokens.setValue(8)
        self.window.chat_panel.input_box.setPlainText("First question: what is a lighthouse?")
        self.window.send_message()

    @Slot(object)
    def next_step(self, _trace) -> None:
        self.replies += 1
        if self.mode == "engine-report":
            heavy = sorted(name for name in ("torch", "transformers") if name in sys.modules)
            print(f"ENGINE {self.window.models.engine.pid}", flush=True)
            print(f"GUI-IMPORTS {heavy}", flush=True)
            return
        if self.replies == 1:
            self.window.chat_panel.settings_panel.max_new_tokens.setValue(400)
            self.window.chat_panel.input_box.setPlainText("Second question: tell me a very long story about the sea.")
            self.window.send_message()

    @Slot(object)
    def on_token(self, event) -> None:
        if self.replies == 1 and event.event.index == 4:  # a Delivered token
            if self.mode == "kill-mid-reply":
                print("STREAMING", flush=True)
            elif self.mode == "close-mid-reply":
                self.close_window()

    @Slot()
    def close_window(self) -> None:
        print(f"CLOSING {time.time():.6f}", flush=True)
        self.window.close()

    @Slot()
    def inspect(self) -> None:
        window = self.window
        print("CHATS", len(window.saved_chats.chat_list.chat_ids()), flush=True)
        print("MESSAGES", [m.role for m in window.session.messages], flush=True)
        print("TRANSCRIPT-BEGIN", flush=True)
        print(window.chat_panel.transcript.toPlainText(), flush=True)
        print("TRANSCRIPT-END", flush=True)
        self.close_window()


def main() -> int:
    mode = sys.argv[1]
    delay_ms = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    app = QApplication.instance() or QApplication(sys.argv[:1])
    driver = Driver(mode, delay_ms)
    QTimer.singleShot(0, driver.attach)  # runs once launch_window has shown the window and entered exec()
    from cli.main import main as latencylab_main

    args = ["--model", "embedded"] if mode != "inspect" else ["--model", "/nonexistent-model-for-inspect"]
    code = latencylab_main(args)
    del app
    return code


if __name__ == "__main__":
    sys.exit(main())
