"""The Server… dialog: a server's URL, protocol, served model, API key and timeout, checked before it closes."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
)

from core.errors import LatencyLabError
from core.remote.api_key import API_KEY_VARIABLE, checked_api_key
from core.remote.spec import PROTOCOLS, RemoteSpec, is_remote_spec
from core.settings import SERVER_TIMEOUT
from gui.untrusted_text import plain_label

EXAMPLES = (
    "llama.cpp: http://127.0.0.1:8080/v1 · vLLM: http://HOST:8000/v1 · Ollama: http://127.0.0.1:11434 · "
    "LM Studio: http://127.0.0.1:1234/v1"
)


class ServerDialog(QDialog):
    """On accept, spec_text(), api_key() and timeout_s() hold the choice; the key is never stored anywhere."""

    def __init__(self, url: str = "", api_key: str | None = None, timeout_s: float | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Connect to a server")
        self.url = QLineEdit()
        self.url.setPlaceholderText("http://127.0.0.1:8080/v1")
        self.protocol = QComboBox()
        self.protocol.addItems(PROTOCOLS)
        self.protocol.setToolTip(
            "openai: chat completions over SSE (vLLM, llama.cpp, LM Studio, SGLang, TGI, "
            "Ollama's /v1). ollama: Ollama's native /api/chat, which reports its own durations. "
            "auto: detect."
        )
        self.served_model = QLineEdit()
        self.served_model.setPlaceholderText("the first model the server lists")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText(f"none, or ${API_KEY_VARIABLE}")
        self.key.setToolTip(
            "Kept in memory for this session only: never written to settings, chats, exports or "
            f"logs. To set it for every launch, export {API_KEY_VARIABLE}."
        )
        self.timeout = QDoubleSpinBox()
        self.timeout.setRange(SERVER_TIMEOUT.low, SERVER_TIMEOUT.high)
        self.timeout.setSuffix(" s")
        self.timeout.setToolTip("Give up when the server sends nothing for this long, while connecting or mid-reply.")
        self.problem = plain_label()
        self.problem.setStyleSheet("color: #b00020;")
        self.problem.setWordWrap(True)
        hint = QLabel(EXAMPLES)
        hint.setWordWrap(True)
        hint.setStyleSheet("color: #555;")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Connect")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("URL", self.url)
        form.addRow("Protocol", self.protocol)
        form.addRow("Model", self.served_model)
        form.addRow("API key", self.key)
        form.addRow("Timeout", self.timeout)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)
        self._fill(url, api_key, timeout_s)

    def _fill(self, url: str, api_key: str | None, timeout_s: float | None) -> None:
        self.timeout.setValue(timeout_s if timeout_s is not None else SERVER_TIMEOUT.default)
        self.key.setText(api_key or "")
        if is_remote_spec(url):
            try:
                spec = RemoteSpec.parse(url)
            except LatencyLabError:
                self.url.setText(url)
                return
            self.url.setText(spec.base_url)
            self.protocol.setCurrentText(spec.protocol)
            self.served_model.setText(spec.model or "")

    def spec_text(self) -> str:
        spec = RemoteSpec.parse(self.url.text())
        return spec.with_choice(
            model=self.served_model.text().strip() or None, protocol=self.protocol.currentText()
        ).text()

    def api_key(self) -> str | None:
        return checked_api_key(self.key.text())

    def timeout_s(self) -> float:
        return self.timeout.value()

    def accept(self) -> None:
        try:
            self.spec_text()
            self.api_key()
        except LatencyLabError as error:
            self.problem.setText(str(error))
            return
        super().accept()
