"""The Lab tab: settings, Run and Cancel, a progress bar, three live plots, the verdicts, export and load.

The sweeps run in the engine (its own process in the app), so the window's painting cannot disturb
the lab's figures; lab runs and chat replies take turns on the engine's compute thread.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core.backend.load_options import LoadOptions
from core.engine.messages import JobDone, JobEvent, JobFailed, LabJob, Progress, RowMeasured
from core.errors import LatencyLabError
from core.lab.machine import contention_warning, machine_summary
from core.lab.results import LabResults, load_results_json, save_results_csv, save_results_json
from gui.engine_client import EngineClient
from gui.export_dialog import export_with_dialog
from gui.lab.batch_plot import BatchPlot
from gui.lab.history_plot import HistorySweepPlot
from gui.lab.lab_form import LabForm
from gui.lab.precision_plot import PrecisionPlot
from gui.lab.prompt_plot import PromptLengthPlot
from gui.lab.roofline_plot import RooflinePlot
from gui.lab.verdict_panel import VerdictPanel
from gui.png_file import save_png
from gui.untrusted_text import plain_label
from gui.vertical_scroll import VerticalScroll

PROGRESS_STEPS = 1000
# Each plot's least height; the roofline's more, for its ceilings' labels.
PLOT_HEIGHT_PX = 210
ROOFLINE_HEIGHT_PX = 320


class LabTab(QWidget):
    """Runs its sweeps through an engine client: the window's, or (alone, in tests) an in-process engine of its own."""

    row_measured = Signal(str, object)  # sweep, row: shown as it arrives
    run_finished = Signal(object)  # LabResults once shown, or None when the run failed

    def __init__(self, client: EngineClient | None = None, parent=None, server_access=None):
        """server_access() gives (API key, timeout) for a server, as the chat's Server… dialog holds them."""
        super().__init__(parent)
        self.server_access = server_access or (lambda: (None, None))
        self.results: LabResults | None = None
        self._running = False
        self._lab_id = 0
        self._owns_client = client is None
        if client is None:
            from core.engine.in_process import InProcessEngine

            client = EngineClient(InProcessEngine(), self)
        self.client = client
        self._build_widgets()
        client.job_arrived.connect(self._on_job_message)
        client.engine_stopped.connect(self._on_engine_stopped)
        self._update_controls()

    # -- construction ---------------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.form = LabForm()
        self.run_button = QPushButton("Run")
        self.cancel_button = QPushButton("Cancel")
        self.load_button = QPushButton("Load JSON…")
        self.export_json_button = QPushButton("Export JSON…")
        self.export_csv_button = QPushButton("Export CSV…")
        self.export_png_button = QPushButton("Export PNG…")
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, PROGRESS_STEPS)
        self.status_label = plain_label("Choose the sweeps and press Run.")
        self.status_label.setObjectName("lab_status")
        self.status_label.setWordWrap(True)
        buttons = QHBoxLayout()
        for button in (self.run_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        for button in (self.load_button, self.export_json_button, self.export_csv_button, self.export_png_button):
            buttons.addWidget(button)

        self.prompt_plot = PromptLengthPlot()
        self.batch_plot = BatchPlot()
        self.precision_plot = PrecisionPlot()
        self.roofline_plot = RooflinePlot()
        self.history_plot = HistorySweepPlot()
        plots = QSplitter(Qt.Orientation.Vertical)
        # The roofline gets a row of its own: its ceilings' labels need the width.
        for pair in (
            (self.prompt_plot, self.batch_plot),
            (self.precision_plot, self.history_plot),
            (self.roofline_plot,),
        ):
            row = QSplitter(Qt.Orientation.Horizontal)
            for plot in pair:
                # Tall enough to read: at 150 pixels, title, legend and axis left a 90-pixel strip of data, and the
                # roofline's eight labels wrote over each other. The column scrolls instead.
                plot.setMinimumHeight(ROOFLINE_HEIGHT_PX if plot is self.roofline_plot else PLOT_HEIGHT_PX)
                row.addWidget(plot)
            plots.addWidget(row)
        self.verdicts = VerdictPanel()
        self.machine_label = plain_label()
        self.machine_label.setObjectName("lab_machine")
        self.machine_label.setWordWrap(True)
        self.machine_label.setStyleSheet("color: #555;")
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.addWidget(self.verdicts)
        side_layout.addWidget(self.machine_label)
        side_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(side)
        # The plots scroll rather than set the window's least height (their rows and the form are more than a
        # 768-pixel laptop screen leaves a window).
        self.results_area = QSplitter(Qt.Orientation.Horizontal)
        self.results_area.addWidget(VerticalScroll(plots))
        self.results_area.addWidget(scroll)
        self.results_area.setSizes([800, 400])

        layout = QVBoxLayout(self)
        layout.addWidget(self.form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.status_label)
        layout.addWidget(self.results_area, stretch=1)

        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        self.load_button.clicked.connect(self._load_dialog)
        self.export_json_button.clicked.connect(self._export_json_dialog)
        self.export_csv_button.clicked.connect(self._export_csv_dialog)
        self.export_png_button.clicked.connect(self._export_png_dialog)

    # -- actions --------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._running

    @Slot()
    def run(self) -> None:
        if self._running:
            return
        if not self.client.alive:
            self.status_label.setText("The engine has stopped: Chat → Restart engine starts a new one.")
            return
        try:
            config = self.form.config()
        except LatencyLabError as error:
            self.status_label.setText(f"Settings refused: {error}")
            return
        self.results = None
        self._clear_plots()
        self.verdicts.clear()
        self.machine_label.setText("")
        self.progress_bar.setValue(0)
        self.status_label.setText("Starting…")
        self._running = True
        self._update_controls()
        key, timeout = self.server_access()
        self._lab_id = self.client.start(LabJob(config, LoadOptions(api_key=key, server_timeout_s=timeout)))

    @Slot()
    def cancel(self) -> None:
        if self._running:
            self.client.stop(self._lab_id)
            self.status_label.setText("Cancelling after the current measurement…")

    def show_results(self, results: LabResults) -> None:
        """Draw a whole result at once: a finished run's, or one loaded from a file."""
        self.results = results
        self._clear_plots()
        self._add_row("ceilings", {"ceilings": results.ceilings, "arithmetic": (results.model or {}).get("arithmetic")})
        for sweep in ("prompt", "batch", "precision", "bandwidth", "history", "size"):
            for row in results.rows(sweep):
                self._add_row(sweep, row)
        self._refresh_plots()
        self.verdicts.show_verdicts(results.verdicts)
        lines = [machine_summary(results.machine, results.bandwidth_measurement)] if results.machine else []
        warning = contention_warning(results.machine)
        if warning:
            lines.append(warning)
        self.machine_label.setText("\n\n".join(lines))
        self._update_controls()

    def export_json(self, path: str | Path) -> None:
        save_results_json(self._results_or_raise(), path)

    def export_csv(self, path: str | Path) -> None:
        save_results_csv(self._results_or_raise(), path)

    def export_png(self, path: str | Path) -> bool:
        return save_png(self.results_area.grab(), path)

    def load_json(self, path: str | Path) -> None:
        """Raises LatencyLabError (with a message for the user) when the file is not a lab result."""
        results = load_results_json(path)
        self.show_results(results)
        self.progress_bar.setValue(PROGRESS_STEPS if not results.cancelled else 0)
        self.status_label.setText(
            f"Loaded {Path(path).name}: {results.row_count()} rows"
            + (f", run {results.started_at}." if results.started_at else ".")
        )

    @Slot()
    def shutdown(self) -> None:
        """Cancel any run; a tab with an engine of its own ends it too (the window ends its engine itself)."""
        self.cancel()
        if self._owns_client and self.client.engine.alive:
            self.client.close(1.0)

    # -- the engine's events ---------------------------------------------------------------------

    @Slot(object)
    def _on_job_message(self, message: JobEvent | JobDone | JobFailed) -> None:
        if message.job_id != self._lab_id or not self._running:
            return
        if isinstance(message, JobFailed):
            self._fail(message.message)
        elif isinstance(message, JobDone):
            if isinstance(message.result, LabResults):
                self._finish(message.result)
            else:
                self._fail(f"the engine sent no lab results ({type(message.result).__name__})")
        elif isinstance(message.event, Progress):
            self._show_progress(message.event)
        elif isinstance(message.event, RowMeasured):
            self._show_row(message.event)

    def _show_progress(self, progress: Progress) -> None:
        self.progress_bar.setValue(round((progress.fraction or 0.0) * PROGRESS_STEPS))
        self.status_label.setText(progress.message)

    def _show_row(self, measured: RowMeasured) -> None:
        self._add_row(measured.sweep, measured.row)
        self._refresh_plots()
        self.row_measured.emit(measured.sweep, measured.row)

    def _finish(self, results: LabResults) -> None:
        self._running = False
        self.show_results(results)
        if results.error:
            self.status_label.setText(f"Stopped by an error: {results.error} Kept {results.row_count()} rows.")
        elif results.cancelled:
            self.status_label.setText(f"Cancelled; kept the {results.row_count()} rows finished before it.")
        else:
            self.progress_bar.setValue(PROGRESS_STEPS)
            self.status_label.setText(f"Done in {results.duration_s:.0f} s: {results.row_count()} rows.")
        self.run_finished.emit(results)

    @Slot(object)
    def _on_engine_stopped(self, stopped) -> None:
        if self._running and not stopped.expected:
            self._fail(f"{stopped.description}. Chat → Restart engine starts a new one; then run the lab again")

    def _fail(self, message: str) -> None:
        self._running = False
        self._update_controls()
        self.status_label.setText(f"The lab run failed: {message}")
        self.run_finished.emit(None)

    # -- helpers --------------------------------------------------------------------------------

    def _add_row(self, sweep: str, row: dict) -> None:
        if row.get("error"):
            return
        if sweep == "ceilings":  # the machine's ceilings (and the model's shape), for the roofline's roof
            self.roofline_plot.set_ceilings(row.get("ceilings"), row.get("arithmetic"))
        elif sweep == "prompt":
            self.prompt_plot.add_row(row)
            self.roofline_plot.add_prompt_row(row)
        elif sweep == "batch":
            self.batch_plot.add_row(row)
            self.roofline_plot.add_batch_row(row)
        elif sweep == "precision":
            self.precision_plot.add_precision_row(row)
            self.roofline_plot.add_precision_row(row)
        elif sweep == "history":
            self.history_plot.add_row(row)
        elif sweep == "bandwidth":
            self.precision_plot.add_bandwidth_row(row)
        elif sweep == "size":
            self.precision_plot.add_size_row(row)

    def _plots(self) -> tuple:
        return self.prompt_plot, self.batch_plot, self.precision_plot, self.roofline_plot, self.history_plot

    def _clear_plots(self) -> None:
        for plot in self._plots():
            plot.reset()
        self._refresh_plots()

    def _refresh_plots(self) -> None:
        for plot in self._plots():
            plot.refresh()

    def _results_or_raise(self) -> LabResults:
        if self.results is None:
            raise LatencyLabError("there are no results yet: run the lab or load a saved result first.")
        return self.results

    def _update_controls(self) -> None:
        running = self._running
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.form.setEnabled(not running)
        self.load_button.setEnabled(not running)
        has_results = self.results is not None and not running
        for button in (self.export_json_button, self.export_csv_button, self.export_png_button):
            button.setEnabled(has_results)

    # -- file dialogs ---------------------------------------------------------------------------

    def _save_dialog(self, title: str, pattern: str, writer) -> None:
        export_with_dialog(self, title, pattern, writer, self.status_label.setText)

    @Slot()
    def _export_json_dialog(self) -> None:
        self._save_dialog("Export lab results", "JSON (*.json)", self.export_json)

    @Slot()
    def _export_csv_dialog(self) -> None:
        self._save_dialog("Export lab results", "CSV (*.csv)", self.export_csv)

    @Slot()
    def _export_png_dialog(self) -> None:
        self._save_dialog("Export lab plots", "PNG (*.png)", self.export_png)

    @Slot()
    def _load_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load lab results", "", "JSON (*.json)")
        if not path:
            return
        try:
            self.load_json(path)
        except LatencyLabError as error:
            self.status_label.setText(f"Could not load {Path(path).name}: {error}")
