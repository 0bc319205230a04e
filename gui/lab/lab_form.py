"""The Lab tab's settings: model, sweeps and their parameters, turned into a validated LabConfig."""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

import core.settings
from core.errors import InvalidSettingsError
from core.lab.config import (
    DEFAULT_BATCH_SIZES,
    DEFAULT_NEW_TOKENS,
    DEFAULT_PROMPT_WORDS,
    DEFAULT_REPEATS,
    DEFAULT_SWEEPS,
    HISTORY_TURNS,
    MAX_NEW_TOKENS,
    MAX_REPEATS,
    MIN_NEW_TOKENS,
    SWEEPS,
    LabConfig,
    parse_int_list,
)

EMBEDDED_CHOICE = "embedded"
SWEEP_TITLES = {
    "prompt": "prompt length",
    "precision": "precision",
    "batch": "batch size",
    "bandwidth": "bandwidth ceiling",
    "history": "chat history",
    "speculation": "speculation (draft length)",
    "size": "model size",
}
SIZE_MODELS_SEPARATOR = ";"


def joined(values) -> str:
    return ",".join(str(value) for value in values)


class LabForm(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        dtype_choices = core.settings.DTYPE_CHOICES
        self.model_box = QComboBox()
        self.model_box.setEditable(True)
        self.model_box.addItem(EMBEDDED_CHOICE)
        self.model_box.setToolTip(
            "The model for the prompt and batch sweeps, and the one loaded at each "
            "precision: 'embedded', a .gguf file, a model folder, a local hub id, or a "
            "server's URL (then the batch sweep runs N simultaneous streams)."
        )
        self.dtype_box = QComboBox()
        self.dtype_box.addItems(dtype_choices)
        self.dtype_box.setToolTip("Precision for the prompt and batch sweeps.")
        self.decode_loop_box = QComboBox()
        self.decode_loop_box.addItems(core.settings.DECODE_LOOP_CHOICES)
        self.decode_loop_box.setToolTip(
            "Decode loop for the prompt and precision sweeps: lean (Latency Lab's "
            "own: Llama, Qwen, Mistral, Phi-3, Gemma) or generate "
            "(transformers'). The batch "
            "sweep always uses generate."
        )
        self.sweep_boxes = {name: QCheckBox(SWEEP_TITLES[name]) for name in SWEEPS}
        for name, box in self.sweep_boxes.items():
            box.setChecked(name in DEFAULT_SWEEPS)
        self.prompt_words_edit = QLineEdit(joined(DEFAULT_PROMPT_WORDS))
        self.prompt_words_edit.setToolTip("Filler words after 'Repeat after me. ', one prompt per value.")
        self.new_tokens_spin = QSpinBox()
        self.new_tokens_spin.setRange(MIN_NEW_TOKENS, MAX_NEW_TOKENS)
        self.new_tokens_spin.setValue(DEFAULT_NEW_TOKENS)
        self.new_tokens_spin.setToolTip("Tokens decoded per run, exactly: end-of-text is held off until then.")
        self.repeats_spin = QSpinBox()
        self.repeats_spin.setRange(1, MAX_REPEATS)
        self.repeats_spin.setValue(DEFAULT_REPEATS)
        self.repeats_spin.setToolTip("Timed runs per row; each row shows their median.")
        self.dtype_boxes = {dtype: QCheckBox(dtype) for dtype in dtype_choices}
        for box in self.dtype_boxes.values():
            box.setChecked(True)
        self.batch_sizes_edit = QLineEdit(joined(DEFAULT_BATCH_SIZES))
        self.sweep_boxes["history"].setToolTip("A chat of several turns, each timed with the prompt cache on and off.")
        self.history_turns_spin = QSpinBox()
        self.history_turns_spin.setRange(int(HISTORY_TURNS.low), int(HISTORY_TURNS.high))
        self.history_turns_spin.setValue(int(HISTORY_TURNS.default))
        self.history_turns_spin.setToolTip("Turns of the chat history sweep's chat.")
        self.size_models_edit = QLineEdit()
        self.size_models_edit.setPlaceholderText("two or more .gguf files or model folders, separated by ;")
        self.size_models_edit.setToolTip(
            "The model size sweep times the same question on each of these (one loaded at a time) and draws decode "
            "speed against weight bytes: the chapter's tok/s ≈ bandwidth / model bytes."
        )
        self.size_models_button = QPushButton("Add…")
        self.size_models_button.clicked.connect(self._add_size_models)
        self.sweep_boxes["size"].setToolTip(self.size_models_edit.toolTip())

        model_row = QHBoxLayout()
        model_row.addWidget(self.model_box, stretch=1)
        model_row.addWidget(self.dtype_box)
        model_row.addWidget(self.decode_loop_box)
        sweeps_row = QHBoxLayout()
        for box in self.sweep_boxes.values():
            sweeps_row.addWidget(box)
        sweeps_row.addStretch(1)
        numbers_row = QHBoxLayout()
        numbers_row.addWidget(self.prompt_words_edit, stretch=1)
        for label, spin in (("new tokens", self.new_tokens_spin), ("repeats", self.repeats_spin)):
            numbers_row.addWidget(QLabel(label))
            numbers_row.addWidget(spin)
        precision_row = QHBoxLayout()
        for box in self.dtype_boxes.values():
            precision_row.addWidget(box)
        precision_row.addStretch(1)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Model", model_row)
        form.addRow("Sweeps", sweeps_row)
        form.addRow("Prompt words", numbers_row)
        form.addRow("Precisions", precision_row)
        batch_row = QHBoxLayout()
        batch_row.addWidget(self.batch_sizes_edit, stretch=1)
        batch_row.addWidget(QLabel("history turns"))
        batch_row.addWidget(self.history_turns_spin)
        form.addRow("Batch sizes", batch_row)
        size_row = QHBoxLayout()
        size_row.addWidget(self.size_models_edit, stretch=1)
        size_row.addWidget(self.size_models_button)
        form.addRow("Size models", size_row)

    def size_models(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.size_models_edit.text().split(SIZE_MODELS_SEPARATOR) if part.strip())

    @Slot()
    def _add_size_models(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Models for the size sweep", "", "GGUF files (*.gguf)")
        if files:
            self.size_models_edit.setText(SIZE_MODELS_SEPARATOR.join((*self.size_models(), *files)))
            self.sweep_boxes["size"].setChecked(True)

    def config(self) -> LabConfig:
        """Raises InvalidSettingsError with a message for the user when a field is wrong."""
        spec = self.model_box.currentText().strip() or EMBEDDED_CHOICE
        sweeps = tuple(name for name, box in self.sweep_boxes.items() if box.isChecked())
        if not sweeps:
            raise InvalidSettingsError("tick at least one sweep.")
        dtypes = tuple(dtype for dtype, box in self.dtype_boxes.items() if box.isChecked())
        if "precision" in sweeps and not dtypes:
            raise InvalidSettingsError("tick at least one precision for the precision sweep.")
        return LabConfig(
            sweeps=sweeps,
            prompt_words=parse_int_list(self.prompt_words_edit.text(), "prompt words"),
            new_tokens=self.new_tokens_spin.value(),
            repeats=self.repeats_spin.value(),
            dtypes=dtypes or None,
            batch_sizes=parse_int_list(self.batch_sizes_edit.text(), "batch sizes"),
            history_turns=self.history_turns_spin.value(),
            size_models=self.size_models(),
            model=None if spec == EMBEDDED_CHOICE else spec,
            dtype=self.dtype_box.currentText(),
            decode_loop=self.decode_loop_box.currentText(),
        )
