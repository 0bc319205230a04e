"""The Lab tab on the real embedded model: Run, live rows, verdicts, Cancel, export and load back."""

import json

import pytest
from PySide6.QtCore import QObject, Qt, Slot

from core.errors import LatencyLabError

pytestmark = pytest.mark.model
RUN_TIMEOUT_MS = 300_000
REPLY_TIMEOUT_MS = 120_000


class RowRecorder(QObject):
    """Receives the engine's rows on the GUI thread, as the tab does, noting whether the run was still going."""

    def __init__(self, tab):
        super().__init__()
        self.tab = tab
        self.rows = []
        tab.row_measured.connect(self.record)

    @Slot(str, object)
    def record(self, sweep, row):
        self.rows.append((sweep, self.tab.running))


@pytest.fixture
def make_tab(qtbot):
    from gui.lab.lab_tab import LabTab

    tabs = []

    def make():
        tab = LabTab()
        qtbot.addWidget(tab)
        tab.resize(1200, 900)
        tab.show()
        tabs.append(tab)
        return tab

    yield make
    for tab in tabs:
        tab.shutdown()
        assert not tab.client.engine.alive


def configure(tab, *, sweeps, prompt_words="5,200", new_tokens=4, dtypes=("float32", "bfloat16"), batch_sizes="1,2"):
    form = tab.form
    for name, box in form.sweep_boxes.items():
        box.setChecked(name in sweeps)
    form.prompt_words_edit.setText(prompt_words)
    form.new_tokens_spin.setValue(new_tokens)
    form.repeats_spin.setValue(1)
    for dtype, box in form.dtype_boxes.items():
        box.setChecked(dtype in dtypes)
    form.batch_sizes_edit.setText(batch_sizes)


def points(item):
    x, _ = item.getData()
    return 0 if x is None else len(x)


def test_a_run_fills_plots_and_verdicts_and_exports_then_loads_back(qtbot, make_tab, tmp_path):
    tab = make_tab()
    configure(tab, sweeps=("prompt", "precision", "batch", "bandwidth"))
    assert not tab.export_json_button.isEnabled() and not tab.cancel_button.isEnabled()
    recorder = RowRecorder(tab)
    with qtbot.waitSignal(tab.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(tab.run_button, Qt.MouseButton.LeftButton)
        assert tab.running and tab.cancel_button.isEnabled() and not tab.run_button.isEnabled()
    results = blocker.args[0]
    assert results is not None and results.error is None and not results.cancelled
    measured = [row for row in recorder.rows if row[0] != "ceilings"]  # the roofline's roof comes first, as rows too
    assert recorder.rows[0][0] == "ceilings" and len(measured) == results.row_count() == 8
    assert all(running for _, running in recorder.rows)  # rows arrived live, before the run finished
    assert tab.progress_bar.value() == tab.progress_bar.maximum()
    assert "Done in" in tab.status_label.text()

    assert points(tab.prompt_plot.ttft_item) == points(tab.prompt_plot.tpot_item) == 2
    assert points(tab.batch_plot.aggregate_item) == points(tab.batch_plot.per_user_item) == 2
    assert points(tab.batch_plot.free_item) == 2
    assert points(tab.precision_plot.measured_item) == 2 and points(tab.precision_plot.ceiling_item) > 2
    assert [label.isVisible() for label in tab.precision_plot.labels[:3]] == [True, True, False]
    ttft_ms = tab.prompt_plot.ttft_item.yData  # getData() would give log10 values: the axis is logarithmic
    assert list(ttft_ms) == [row["ttft_s"] * 1000 for row in results.prompt]
    for verdict in results.verdicts:
        shown = tab.verdicts.verdict_text(verdict["key"])
        assert {True: "Holds.", False: "Does not hold", None: "Not tested."}[verdict["holds"]] in shown
        assert verdict["claim"].split(",")[0] in shown
    assert "GB/s" in tab.machine_label.text()

    assert tab.export_json_button.isEnabled()
    tab.export_json(tmp_path / "lab.json")
    tab.export_csv(tmp_path / "lab.csv")
    assert tab.export_png(tmp_path / "lab.png") and (tmp_path / "lab.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "lab.json").read_text())["prompt"] == results.prompt
    assert (tmp_path / "lab.csv").read_text().count("\nprompt,") == 2

    other = make_tab()
    other.load_json(tmp_path / "lab.json")
    assert "Loaded lab.json" in other.status_label.text()
    for name in ("ttft_item", "tpot_item"):
        assert list(getattr(other.prompt_plot, name).yData) == list(getattr(tab.prompt_plot, name).yData)
    assert list(other.precision_plot.ceiling_item.yData) == list(tab.precision_plot.ceiling_item.yData)
    assert other.verdicts.verdict_text("batch") == tab.verdicts.verdict_text("batch")
    assert other.export_json_button.isEnabled()


def test_cancel_keeps_the_rows_finished_so_far(qtbot, make_tab):
    tab = make_tab()
    configure(tab, sweeps=("prompt",), prompt_words="5,10,20", new_tokens=40)
    with qtbot.waitSignal(tab.row_measured, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(tab.run_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(tab.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(tab.cancel_button, Qt.MouseButton.LeftButton)
    results = blocker.args[0]
    assert results.cancelled and 1 <= len(results.prompt) < 3
    assert points(tab.prompt_plot.ttft_item) == len(results.prompt)
    assert "Cancelled" in tab.status_label.text() and tab.run_button.isEnabled()
    assert tab.export_json_button.isEnabled()


def test_shutdown_during_a_run_stops_and_joins(qtbot, make_tab):
    tab = make_tab()
    configure(tab, sweeps=("prompt",), prompt_words="5,10,20", new_tokens=400)
    with qtbot.waitSignal(tab.client.job_arrived, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(tab.run_button, Qt.MouseButton.LeftButton)
    engine = tab.client.engine
    tab.shutdown()
    assert not engine.alive and engine.core.close(60)  # the cancel reached the run, whose job then ended


def test_bad_settings_and_bad_files_give_a_message(qtbot, make_tab, tmp_path):
    tab = make_tab()
    configure(tab, sweeps=("prompt",), prompt_words="10,abc")
    qtbot.mouseClick(tab.run_button, Qt.MouseButton.LeftButton)
    assert not tab.running and "'abc' is not a whole number" in tab.status_label.text()
    configure(tab, sweeps=(), prompt_words="10")
    qtbot.mouseClick(tab.run_button, Qt.MouseButton.LeftButton)
    assert not tab.running and "at least one sweep" in tab.status_label.text()
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"format": "latencylab-trace/1"}))
    with pytest.raises(LatencyLabError, match="not a Latency Lab result"):
        tab.load_json(trace)
    with pytest.raises(LatencyLabError, match="no results yet"):
        tab.export_json(tmp_path / "none.json")


def test_a_chat_reply_sent_during_a_lab_run_takes_turns_with_it(qtbot, window):
    """Both run on the one compute thread: the reply waits for at most one measurement, and neither breaks."""
    tab = window.lab_tab
    configure(tab, sweeps=("prompt",), prompt_words="5,200", new_tokens=4)
    with qtbot.waitSignal(tab.run_finished, timeout=RUN_TIMEOUT_MS) as lab_done:
        tab.run()
        window.chat_panel.settings_panel.max_new_tokens.setValue(8)
        window.chat_panel.input_box.setPlainText("Name a colour.")
        with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as reply:
            window.send_message()
        trace = reply.args[0]
        assert trace.error is None and trace.output_tokens >= 1 and trace.text.strip()
    results = lab_done.args[0]
    assert results.error is None and not results.cancelled
    assert [row["prompt_words"] for row in results.prompt] == [5, 200]


def test_closing_during_a_lab_model_load_does_not_wait_for_it(open_window, held_load):
    """A lab stuck in a model load must not hold the window's close (it used to wait up to 30 s)."""
    inside, release = held_load.inside, held_load.release
    window = open_window(show=False)
    lab = window.lab_tab
    for sweep in ("bandwidth", "precision", "batch"):
        lab.form.sweep_boxes[sweep].setChecked(False)
    lab.run()
    engine = window.models.engine
    try:
        assert inside.wait(60)
        window.close()
        assert not release.is_set() and not engine.alive  # closed while the load still ran
    finally:
        release.set()
        assert engine.core.close(60)


@pytest.mark.llama_cpp
def test_the_size_sweep_draws_each_model_by_its_bytes_and_judges_the_claim(qtbot, make_tab):
    from core.model.source import embedded_gguf_path
    from tools import quant_files

    small, large = embedded_gguf_path(), quant_files.quant_file("Q8_0")
    tab = make_tab()
    configure(tab, sweeps=("size",))
    assert "model size" in tab.form.sweep_boxes["size"].text()
    tab.form.size_models_edit.setText(f"{small} ; {large}")
    with qtbot.waitSignal(tab.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        tab.run_button.click()
    results = blocker.args[0]
    assert results.error is None and [row["model"] for row in results.size] == [small.name, large.name]
    assert points(tab.precision_plot.measured_item) == 2
    assert [label.toPlainText().strip() for label in tab.precision_plot.labels[:2]] == [small.name, large.name]
    shown = tab.verdicts.verdict_text("size")
    assert "a model k times larger decodes about k times slower" in shown and small.name in shown


def test_the_size_sweep_with_one_model_says_so(qtbot, make_tab):
    tab = make_tab()
    configure(tab, sweeps=("size",))
    tab.form.size_models_edit.setText("embedded")
    tab.run_button.click()
    assert not tab.running and "two or more models" in tab.status_label.text()
