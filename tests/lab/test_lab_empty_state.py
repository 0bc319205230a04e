"""Before any sweep, the Lab's plots say how to fill them instead of showing bare 0-1 axes (issue #14)."""

import pytest

from core.lab.results import LabResults, save_results_json
from gui.plotting.empty_note import RUN_A_SWEEP

pytestmark = pytest.mark.plots

PROMPT_ROWS = [
    {"prompt_tokens": 20, "ttft_s": 0.15, "tpot_s": 0.02},
    {"prompt_tokens": 400, "ttft_s": 1.2, "tpot_s": 0.021},
]


@pytest.fixture
def tab(qtbot):
    from gui.lab.lab_tab import LabTab

    tab = LabTab()
    qtbot.addWidget(tab)
    tab.resize(1200, 900)
    tab.show()
    qtbot.waitExposed(tab)
    yield tab
    tab.shutdown()
    assert not tab.client.engine.alive


def _plots(tab):
    return {
        "prompt": tab.prompt_plot,
        "batch": tab.batch_plot,
        "precision": tab.precision_plot,
        "roofline": tab.roofline_plot,
    }


def _shows_the_note(plot) -> bool:
    note, view = plot.empty_note.item, plot.getViewBox()
    axes_shown = [plot.getAxis(side).isVisible() for side in ("left", "bottom")]
    if not note.isVisible():
        assert all(axes_shown), "data is shown without its axes"
        return False
    assert not any(axes_shown), "the note is shown over bare axes"
    # The whole note lies inside the (empty) data area, centred to within a pixel.
    box, area = note.sceneBoundingRect(), view.sceneBoundingRect()
    assert area.contains(box) and abs(box.center().x() - area.center().x()) < 1
    return True


def test_a_new_lab_tab_says_how_to_fill_its_plots(tab):
    assert RUN_A_SWEEP.startswith("Press Run")
    for name, plot in _plots(tab).items():
        assert _shows_the_note(plot), name
        assert plot.empty_note.item.text() == RUN_A_SWEEP


def test_loaded_results_bring_back_the_axes_only_where_there_are_points(tab, tmp_path):
    path = tmp_path / "lab.json"
    save_results_json(LabResults(config={}, prompt=PROMPT_ROWS), path)
    tab.load_json(path)
    shown = {name: _shows_the_note(plot) for name, plot in _plots(tab).items()}
    # These rows carry no FLOP counts (a result saved before the roofline): the roofline keeps its note.
    assert shown == {"prompt": False, "batch": True, "precision": True, "roofline": True}
    assert list(tab.prompt_plot.ttft_item.getData()[0]) == [20, 400]


def test_a_result_with_every_sweep_hides_every_note_and_clearing_shows_them_again(tab):
    from core.lab.roofline_rows import prompt_row_fields

    arithmetic = {
        "layers": 2,
        "width": 64,
        "heads": 2,
        "kv_heads": 1,
        "head_dim": 32,
        "ffn": 128,
        "vocab": 100,
        "weight_bytes": 100_000,
    }
    prompt = [{**row, "new_tokens": 8} for row in PROMPT_ROWS]
    results = LabResults(
        config={},
        prompt=[{**row, **prompt_row_fields(row, arithmetic)} for row in prompt],
        batch=[
            {"batch_size": 1, "aggregate_tok_s": 40.0, "per_seq_tok_s": 40.0},
            {"batch_size": 4, "aggregate_tok_s": 120.0, "per_seq_tok_s": 30.0},
        ],
        precision=[{"dtype": "float32", "weight_bytes": 540e6, "decode_tok_s": 22.0}],
    )
    tab.show_results(results)
    assert not any(_shows_the_note(plot) for plot in _plots(tab).values())
    tab.show_results(LabResults(config={}))
    assert all(_shows_the_note(plot) for plot in _plots(tab).values())
