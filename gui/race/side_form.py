"""One side's settings in the race window: model, precision, streaming, prompt cache, max tokens and sampling."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
)

from core.model.source import EMBEDDED_SPEC
from core.race.sides import RaceSide, side_from_values
from core.remote.spec import is_remote_spec
from core.settings import DTYPE_CHOICES
from gui.settings.sampling_fields import sampling_fields

SIDE_COLORS = {"A": "#1a73e8", "B": "#c5221f"}


class SideForm(QGroupBox):
    """side() gives the RaceSide, checked by core (InvalidSettingsError in one line); set_side() shows one."""

    changed = Signal()

    def __init__(self, name: str, parent=None):
        super().__init__(f"{name}", parent)
        self.name = name
        self.setStyleSheet(f"QGroupBox {{ font-weight: 700; color: {SIDE_COLORS[name]}; }}")
        self.model_box = QComboBox()
        self.model_box.setEditable(True)
        self.model_box.addItem(EMBEDDED_SPEC)
        self.model_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_box.setMinimumContentsLength(14)
        self.model_box.setToolTip(
            "'embedded', a .gguf file, a model folder, a Hugging Face id on this machine, or a "
            "server's URL (http://127.0.0.1:8080/v1); a server's key is the chat's (Server…)."
        )
        self.dtype_box = QComboBox()
        self.dtype_box.addItems(DTYPE_CHOICES)
        self.streaming = QCheckBox("Streaming")
        self.streaming.setToolTip("On: text appears token by token, after TTFT. Off: all at once, after E2E.")
        self.prompt_cache = QCheckBox("Prompt cache")
        self.prompt_cache.setToolTip(
            "On: the shared history (when the race includes one) is reused from the cache; "
            "only the new turn is prefilled."
        )
        fields = sampling_fields()
        self.max_new_tokens, self.temperature, self.top_p, self.seed = (
            fields.max_new_tokens,
            fields.temperature,
            fields.top_p,
            fields.seed,
        )
        grid = QGridLayout(self)
        grid.setContentsMargins(6, 4, 6, 4)
        grid.setVerticalSpacing(2)
        grid.addWidget(QLabel("Model"), 0, 0)
        grid.addWidget(self.model_box, 0, 1, 1, 3)
        grid.addWidget(QLabel("dtype"), 0, 4)
        grid.addWidget(self.dtype_box, 0, 5)
        switches = QHBoxLayout()
        switches.addWidget(self.streaming)
        switches.addWidget(self.prompt_cache)
        grid.addLayout(switches, 1, 0, 1, 2)
        grid.addWidget(QLabel("max tokens"), 2, 0)
        grid.addWidget(self.max_new_tokens, 2, 1)
        grid.addWidget(QLabel("temp"), 2, 2)
        grid.addWidget(self.temperature, 2, 3)
        grid.addWidget(QLabel("top-p"), 2, 4)
        grid.addWidget(self.top_p, 2, 5)
        grid.addWidget(QLabel("seed"), 1, 4)
        grid.addWidget(self.seed, 1, 5)
        self.model_box.currentTextChanged.connect(self._on_model_changed)
        for signal in (
            self.model_box.currentTextChanged,
            self.dtype_box.currentTextChanged,
            self.streaming.toggled,
            self.prompt_cache.toggled,
            self.max_new_tokens.valueChanged,
            self.temperature.valueChanged,
            self.top_p.valueChanged,
            self.seed.textChanged,
        ):
            signal.connect(self.changed)
        self.set_side(RaceSide(name))

    def side(self, server_timeout_s: float | None = None) -> RaceSide:
        model = self.model_box.currentText().strip() or EMBEDDED_SPEC
        values = {
            "model": model,
            "streaming": self.streaming.isChecked(),
            "prompt_cache": self.prompt_cache.isChecked(),
            "max_new_tokens": self.max_new_tokens.value(),
            "temperature": self.temperature.value(),
            "top_p": self.top_p.value(),
            "seed": self.seed.value(),
        }
        if not is_remote_spec(model):  # a server is given no dtype: it runs its own
            values["dtype"] = self.dtype_box.currentText()
        base = RaceSide(self.name, server_timeout_s=server_timeout_s)
        return side_from_values(self.name, values, base)

    def set_side(self, side: RaceSide) -> None:
        if self.model_box.findText(side.model) < 0:
            self.model_box.addItem(side.model)
        self.model_box.setCurrentText(side.model)
        self.dtype_box.setCurrentText(side.dtype)
        self.streaming.setChecked(side.streaming)
        settings = side.settings
        self.prompt_cache.setChecked(settings.prompt_cache)
        self.max_new_tokens.setValue(settings.max_new_tokens)
        self.temperature.setValue(settings.temperature)
        self.top_p.setValue(settings.top_p)
        self.seed.setValue(settings.seed)
        self._on_model_changed(side.model)

    def offer_models(self, specs: list[str]) -> None:
        """Models to pick from (the chat's own first); the current choice stays."""
        current = self.model_box.currentText()
        for spec in specs:
            if spec and self.model_box.findText(spec) < 0:
                self.model_box.addItem(spec)
        self.model_box.setCurrentText(current)

    def _on_model_changed(self, text: str) -> None:
        self.dtype_box.setEnabled(not is_remote_spec(text))
