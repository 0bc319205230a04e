"""Model picker and sampling settings: what to load and how to sample the next reply; they fold away to one line."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QWidget,
)

from core.errors import InvalidSettingsError
from core.model.source import EMBEDDED_SPEC
from core.remote.spec import is_remote_spec
from core.settings import DECODE_LOOP, DECODE_LOOP_CHOICES, DTYPE, DTYPE_CHOICES, GenerationSettings, validate_dtype
from gui.settings.fold_header import FoldHeader
from gui.settings.sampling_fields import sampling_fields
from gui.settings.speculation_fields import SpeculationFields
from gui.settings.store import WindowSettings
from gui.untrusted_text import plain_label

EMBEDDED_CHOICE = EMBEDDED_SPEC
BUTTON_PADDING_PX = 10  # each side of a squeezed button's word, inside its frame
SYSTEM_EXCERPT = 24  # characters of the system prompt the folded line shows (the whole line is its tooltip)


def narrow_when_squeezed(button: QPushButton) -> None:
    """The button keeps its usual width where there is room, and shrinks to its word where there is not: the style
    holds every push button to 80 pixels at least, three of them a sixth of a laptop's chat column."""
    button.setMinimumWidth(button.fontMetrics().horizontalAdvance(button.text()) + 2 * BUTTON_PADDING_PX)


class SettingsPanel(QWidget):
    """Unfolded, about 175 pixels of the chat's column, kept for the whole chat: folded, one line that says what they
    are, and the load's progress or error while there is one to show."""

    load_requested = Signal(str, str)  # model spec, dtype
    fold_changed = Signal(bool)  # folded

    def __init__(self, settings: WindowSettings, parent=None):
        super().__init__(parent)
        self.model_box = QComboBox()
        self.model_box.setEditable(True)
        # A file's full path must not widen the window past its screen (the meter was pushed off it): the box
        # takes the room the row gives it and scrolls a long path inside.
        self.model_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        # Ten characters at least ("embedded", a short URL's start): at 16 the settings' least width left the saved
        # chats' sidebar 74 pixels on a 1366-pixel laptop, a title's first eight letters.
        self.model_box.setMinimumContentsLength(10)
        self.model_box.addItem(EMBEDDED_CHOICE)
        self.model_box.setToolTip(
            "'embedded' is SmolLM2-135M-Instruct shipped with the app. Or type a Hugging Face "
            "id already on this machine, pick a local folder or .gguf file, or a server's URL "
            "(Server…)."
        )
        self.browse_button = QPushButton("Folder…")
        self.server_button = QPushButton("Server…")
        self.server_button.setToolTip(
            "Measure a model served elsewhere: vLLM, llama.cpp's server, Ollama, LM Studio or "
            "any OpenAI-compatible endpoint."
        )
        # A server's key and timeout for this session: in memory only, never saved.
        self.server_key: str | None = None
        self.server_timeout_s: float | None = None
        self.browse_button.setToolTip(
            "Pick a local model folder (config.json + safetensors, or one or more .gguf "
            "files: with several, you choose which)"
        )
        self.load_button = QPushButton("Load")
        self.dtype_box = QComboBox()
        self.dtype_box.addItems(DTYPE_CHOICES)
        self.dtype_box.setToolTip(
            "Weight precision. native runs a GGUF in its own quant types (Q4_K_M, Q8_0, ...). "
            "Decode reads every weight once per token, so fewer bytes per weight means more "
            "tokens per second."
        )
        self.system_prompt = QPlainTextEdit()
        self.system_prompt.setPlaceholderText("System prompt (optional)")
        self.system_prompt.setMaximumHeight(54)
        fields = sampling_fields()
        self.max_new_tokens, self.temperature, self.top_p, self.seed = (
            fields.max_new_tokens,
            fields.temperature,
            fields.top_p,
            fields.seed,
        )
        self.decode_loop_box = QComboBox()
        self.decode_loop_box.addItems(DECODE_LOOP_CHOICES)
        self.decode_loop_box.setToolTip(
            "lean: Latency Lab's own decode loop (Llama, Qwen, Mistral, Phi-3 and Gemma models; others fall "
            "back to generate), "
            "same tokens with less Python per step. generate: transformers' model.generate. "
            "Switch to see how much of TPOT is framework overhead rather than reading weights."
        )
        self.speculation = SpeculationFields()
        self.load_progress = QProgressBar()
        self.load_progress.setRange(0, 1000)
        self.load_progress.setVisible(False)
        self.load_message = plain_label()
        self.load_message.setWordWrap(True)
        self._message_matters = False  # a load running or failed: shown even while folded
        self.fold_header = FoldHeader()

        model_row = QHBoxLayout()
        for button in (self.browse_button, self.server_button, self.load_button):
            narrow_when_squeezed(button)
        model_row.addWidget(self.model_box, stretch=1)
        model_row.addWidget(self.browse_button)
        model_row.addWidget(self.server_button)
        model_row.addWidget(self.dtype_box)
        model_row.addWidget(self.load_button)
        # Two short rows, not one long one: in one row they set the window's minimum width above
        # 90% of a 1400-pixel screen.
        sampling_row, seed_row, speculation_row = QHBoxLayout(), QHBoxLayout(), QHBoxLayout()
        for row, labelled in (
            (sampling_row, (("max new", self.max_new_tokens), ("temp", self.temperature), ("top-p", self.top_p))),
            (seed_row, (("seed", self.seed), ("loop", self.decode_loop_box))),
            (
                speculation_row,
                (
                    ("", self.speculation.choice),
                    ("draft tokens", self.speculation.drafts),
                    ("", self.speculation.draft_model_box),
                    ("", self.speculation.draft_model_button),
                ),
            ),
        ):
            for label, widget in labelled:
                if label:
                    row.addWidget(QLabel(label))
                row.addWidget(widget)
            row.addStretch(1)
        self.form = form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow(self.fold_header)
        form.addRow("Model", model_row)
        form.addRow("", self.load_progress)
        form.addRow("", self.load_message)
        form.addRow("System", self.system_prompt)
        form.addRow("Sampling", sampling_row)
        form.addRow("", seed_row)
        form.addRow("Drafts", speculation_row)  # a short label: the column is as wide as its widest
        # What folding hides: every row of fields (the load's progress bar shows itself while a load runs).
        self._foldable_rows = (1, 4, 5, 6, 7)

        self.apply(settings)
        # activated fires on the user's pick only, never on apply()'s setCurrentText.
        self.dtype_box.activated.connect(self._mark_dtype_chosen)
        self.browse_button.clicked.connect(self._browse)
        self.server_button.clicked.connect(self._choose_server)
        self.model_box.currentTextChanged.connect(self._on_model_text)
        self._on_model_text(self.model_box.currentText())
        self.load_button.clicked.connect(self._request_load)
        self.fold_header.fold_changed.connect(self._on_fold_changed)
        for changed in (
            self.model_box.currentTextChanged,
            self.dtype_box.currentTextChanged,
            self.max_new_tokens.valueChanged,
            self.temperature.valueChanged,
            self.top_p.valueChanged,
            self.seed.textChanged,
            self.decode_loop_box.currentTextChanged,
            self.speculation.choice.currentIndexChanged,
            self.speculation.drafts.valueChanged,
            self.speculation.draft_model_box.textChanged,
            self.system_prompt.textChanged,
        ):
            changed.connect(self._show_summary)  # a reopened chat's settings, or a server picked, while folded
        # As wide folded as unfolded: the chat's column then keeps its width, and the chat list beside it does not
        # grow by 180 pixels when the settings fold.
        self.setMinimumWidth(self.minimumSizeHint().width())
        self.set_folded(settings.settings_folded)

    @property
    def folded(self) -> bool:
        return self.fold_header.folded

    def set_folded(self, folded: bool) -> None:
        self.fold_header.set_folded(folded)
        self._show_fold()

    def summary(self) -> str:
        """The settings in one line, as the folded header shows them."""
        seed = self.seed.value()
        system = " ".join(self.system_prompt.toPlainText().split())
        parts = [
            self.model_spec(),
            self.dtype(),
            # Early in the line, where the cut at its right end does not reach: it changes every reply.
            *([f"system “{_excerpt(system, SYSTEM_EXCERPT)}”"] if system else []),
            f"max new {self.max_new_tokens.value()}",
            f"temp {self.temperature.value():g}",
            f"top-p {self.top_p.value():g}",
            f"seed {'random' if seed is None else seed}",
            self.decode_loop_box.currentText(),
        ]
        if self.speculation.speculation() != "off":
            parts.append(f"speculate {self.speculation.speculation()} ×{self.speculation.draft_tokens()}")
        return " · ".join(parts)

    @Slot(bool)
    def _on_fold_changed(self, folded: bool) -> None:
        self._show_fold()
        self.fold_changed.emit(folded)

    def _show_fold(self) -> None:
        folded = self.folded
        for row in self._foldable_rows:
            self.form.setRowVisible(row, not folded)
        if not folded:
            self.speculation.show_choice()
        self.form.setRowVisible(self.load_message, not folded or self._message_matters)
        self._show_summary()

    @Slot()
    def _show_summary(self) -> None:
        if self.folded:
            self.fold_header.summary.setText(self.summary())

    def apply(self, settings: WindowSettings) -> None:
        if self.model_box.findText(settings.model_spec) < 0:
            self.model_box.addItem(settings.model_spec)
        self.model_box.setCurrentText(settings.model_spec)
        self.dtype_box.setCurrentText(settings.dtype if settings.dtype in DTYPE_CHOICES else DTYPE.default)
        self._dtype_chosen = settings.dtype_chosen
        self.system_prompt.setPlainText(settings.system_prompt)
        self.max_new_tokens.setValue(settings.max_new_tokens)
        self.temperature.setValue(settings.temperature)
        self.top_p.setValue(settings.top_p)
        self.seed.setValue(settings.seed)
        self.decode_loop_box.setCurrentText(
            settings.decode_loop if settings.decode_loop in DECODE_LOOP_CHOICES else DECODE_LOOP.default
        )
        self.speculation.set_values(settings.speculation, settings.draft_tokens, settings.draft_model)

    def model_spec(self) -> str:
        return self.model_box.currentText().strip() or EMBEDDED_CHOICE

    def dtype(self) -> str:
        return self.dtype_box.currentText()

    def generation_settings(self) -> GenerationSettings:
        """Raises InvalidSettingsError with a message for the user when a value is out of range."""
        validate_dtype(self.dtype())
        return GenerationSettings(
            max_new_tokens=self.max_new_tokens.value(),
            temperature=round(self.temperature.value(), 4),
            top_p=round(self.top_p.value(), 4),
            seed=self.seed.value(),
            decode_loop=self.decode_loop_box.currentText(),
            speculation=self.speculation.speculation(),
            draft_tokens=self.speculation.draft_tokens(),
            draft_model=self.speculation.draft_model(),
        )

    def collect(self, streaming: bool, prompt_cache: bool = True) -> WindowSettings:
        return WindowSettings(
            prompt_cache=prompt_cache,
            model_spec=self.model_spec(),
            dtype=self.dtype(),
            system_prompt=self.system_prompt.toPlainText(),
            max_new_tokens=self.max_new_tokens.value(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            seed=self.seed.value(),
            streaming=streaming,
            decode_loop=self.decode_loop_box.currentText(),
            speculation=self.speculation.speculation(),
            draft_tokens=self.speculation.draft_tokens(),
            draft_model=self.speculation.draft_model_box.text().strip(),
            dtype_chosen=self._dtype_chosen,
            settings_folded=self.folded,
        )

    @Slot()
    def _mark_dtype_chosen(self) -> None:
        self._dtype_chosen = True

    def show_progress(self, fraction: float, message: str) -> None:
        self.load_progress.setVisible(fraction < 1.0)
        self.load_progress.setValue(int(fraction * 1000))
        self.load_message.setStyleSheet("")
        self.load_message.setText(message)
        self._message_matters = fraction < 1.0
        self._show_fold()

    def show_load_error(self, message: str) -> None:
        self.load_progress.setVisible(False)
        self.load_message.setStyleSheet("color: #b00020;")
        self.load_message.setText(message)
        self._message_matters = True
        self._show_fold()

    def set_loading(self, loading: bool) -> None:
        self.load_button.setEnabled(not loading)
        self.browse_button.setEnabled(not loading)
        self.server_button.setEnabled(not loading)

    def offer_served_models(self, spec_texts: list[str]) -> None:
        """A server's other models, as entries of the model picker."""
        for text in spec_texts:
            if self.model_box.findText(text) < 0:
                self.model_box.addItem(text)

    @Slot(str)
    def _on_model_text(self, text: str) -> None:
        # A server chose its own precision; the box would only mislead.
        self.dtype_box.setEnabled(not is_remote_spec(text.strip()))

    @Slot()
    def _choose_server(self) -> None:
        from gui.model.server_dialog import ServerDialog

        dialog = ServerDialog(self.model_spec(), self.server_key, self.server_timeout_s, self)
        if dialog.exec():
            self.server_key, self.server_timeout_s = dialog.api_key(), dialog.timeout_s()
            self.model_box.setCurrentText(dialog.spec_text())
            self._request_load()

    @Slot()
    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a model folder")
        if not folder:
            return
        spec, chosen = self._pick_gguf(Path(folder))
        self.model_box.setCurrentText(spec)
        # Choosing a model is the request to run it, as with Server… (and LM Studio's picker).
        if chosen:
            self._request_load()

    def _pick_gguf(self, folder: Path) -> tuple[str, bool]:
        """The folder itself, or, where it holds several GGUF files and no config.json (an LM Studio or
        Ollama folder with a few quantisations of one model), the file the user picks among them; and
        whether a model was chosen (False when the user cancelled the pick among the files)."""
        ggufs = sorted(path.name for path in folder.glob("*.gguf")) if not (folder / "config.json").is_file() else []
        if len(ggufs) < 2:
            return str(folder), True
        name, chosen = QInputDialog.getItem(
            self, "Choose a GGUF file", f"{folder.name} holds {len(ggufs)} GGUF files:", ggufs, 0, False
        )
        return (str(folder / name), True) if chosen else (str(folder), False)

    @Slot()
    def _request_load(self) -> None:
        try:
            validate_dtype(self.dtype())
        except InvalidSettingsError as error:
            self.show_load_error(str(error))
            return
        self.load_requested.emit(self.model_spec(), self.dtype())


def _excerpt(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"
