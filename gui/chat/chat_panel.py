"""The chat side of the window: model and sampling settings, the transcript, the message box and its buttons."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from gui.chat.input_box import InputBox
from gui.chat.prefill_bar import PrefillBar
from gui.chat.status_strip import StatusStrip
from gui.chat.transcript_view import TranscriptView
from gui.settings.panel import SettingsPanel
from gui.settings.store import WindowSettings
from gui.untrusted_text import plain_label


class ChatPanel(QWidget):
    """Widgets only; the window wires them to the reply and model controllers."""

    def __init__(self, settings: WindowSettings, parent=None):
        super().__init__(parent)
        self.settings_panel = SettingsPanel(settings)
        self.transcript = TranscriptView()
        self.indicator = plain_label()
        self.indicator.setObjectName("generating_indicator")
        self.indicator.setStyleSheet("color: #8a5300; font-weight: 600;")
        self.indicator.setVisible(False)
        self.prefill_bar = PrefillBar()
        self.input_box = InputBox()
        self.input_box.setMaximumHeight(90)
        self.send_button = QPushButton("Send")
        self.stop_button = QPushButton("Stop (Esc)")
        self.regenerate_button = QPushButton("Regenerate")
        self.new_chat_button = QPushButton("New chat")
        self.streaming_toggle = QCheckBox("Streaming (Ctrl+T)")
        self.streaming_toggle.setChecked(settings.streaming)
        self.streaming_toggle.setStyleSheet("QCheckBox { font-weight: 700; }")
        self.streaming_toggle.setToolTip(
            "On: text appears token by token, after TTFT. Off: the whole reply "
            "appears at once, after E2E. Tokens are timed either way."
        )
        self.cache_toggle = QCheckBox("Prompt cache (Ctrl+K)")
        self.cache_toggle.setObjectName("prompt_cache_toggle")
        self.cache_toggle.setChecked(settings.prompt_cache)
        self.cache_toggle.setStyleSheet("QCheckBox { font-weight: 700; }")
        self.cache_toggle.setToolTip(
            "On: each reply reuses the chat's keys and values from the turns before, so only the new tokens are "
            "prefilled and TTFT follows them, not the history. Off: the whole chat is prefilled at every turn, "
            "and TTFT grows with it."
        )
        # The two switches on a row of their own: beside the buttons they widened the chat past what fits next to
        # the meter on a 1400-pixel screen.
        switches = QHBoxLayout()
        switches.addWidget(self.streaming_toggle)
        switches.addWidget(self.cache_toggle)
        switches.addStretch(1)
        buttons = QHBoxLayout()
        for button in (self.send_button, self.stop_button, self.regenerate_button, self.new_chat_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        for widget, stretch in (
            (self.settings_panel, 0),
            (self.transcript, 1),
            (self._status_strip(), 0),
            (self.input_box, 0),
        ):
            layout.addWidget(widget, stretch=stretch)
        layout.addLayout(switches)
        layout.addLayout(buttons)

    def _status_strip(self) -> QWidget:
        """The prefill bar and the generating indicator, in a row of fixed height below the transcript.

        Each shows for part of a reply. Were they rows of their own, showing or hiding one would re-lay out the chat
        panel, resizing the transcript and repainting it whole, twice a reply, on the GUI thread decode shares.
        """
        return StatusStrip(self.prefill_bar, self.indicator)
