"""A lab result file that says a TTFT is -1, NaN or "x", or a verdict is a number, is refused in one line; the
Lab keeps what it showed (the plots take logarithms and ratios of these numbers)."""

import copy
import json

import pytest

from core.lab.results import LabResults, LabResultsError, load_results_json, results_from_json, save_results_json
from tests.support.roofline_facts import ARITHMETIC, GIGA, ceilings_document

# A result shaped as a real run writes one (every sweep the plots draw, the ceilings, the model's shape, a verdict).
GOOD = LabResults(
    config={"model": "embedded"},
    machine={"cpu": "x86_64", "logical_cores": 2, "torch_threads": 2, "cpu_share": 0.98},
    model={"arithmetic": ARITHMETIC},
    bandwidth_measurement={"bytes_per_s": 28.3 * GIGA, "median_bytes_per_s": 27.7 * GIGA},
    ceilings=ceilings_document({"gemm_int8": 1367 * GIGA, "dram": 28.3 * GIGA}),
    prompt=[
        {
            "prompt_tokens": 15,
            "ttft_s": 0.0275,
            "tpot_s": 0.0091,
            "residual_pct": -11.7,
            "ttft_runs_s": [0.0275],
            "prefill_intensity": 33.0,
            "prefill_flops_per_s": 118 * GIGA,
            "decode_intensity": 2.8,
            "decode_flops_per_s": 30 * GIGA,
        }
    ],
    batch=[
        {
            "batch_size": 1,
            "step_time_s": 0.004,
            "aggregate_tok_s": 251.0,
            "per_seq_tok_s": 251.0,
            "decode_flops_per_s": None,
        }
    ],
    precision=[{"dtype": "native", "weight_bytes": 96_436_224, "decode_tok_s": 118.3, "arithmetic": None}],
    history=[{"turn": 1, "prompt_tokens": 42, "cached_tokens": 0, "ttft_on_s": 0.0536, "ttft_off_s": 0.0505}],
    verdicts=[
        {"key": "prompt", "claim": "c", "holds": True, "evidence": "e", "criterion": "k", "sentence": "c: e. Holds."}
    ],
).to_dict()


def with_change(path: tuple, value) -> str:
    document = copy.deepcopy(GOOD)
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(document, allow_nan=True)


def test_a_result_as_a_run_writes_it_loads():
    results = results_from_json(json.dumps(GOOD))
    assert results.row_count() == 4 and results.verdicts[0]["holds"] is True


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        (("prompt", 0, "ttft_s"), -1.0, "prompt[0].ttft_s must be above 0 and at most 1e+24, not -1.0"),
        (("prompt", 0, "ttft_s"), float("nan"), "prompt[0].ttft_s must be above 0 and at most 1e+24, not nan"),
        (("prompt", 0, "prefill_intensity"), float("inf"), "prompt[0].prefill_intensity must be above 0"),
        (("prompt", 0, "decode_flops_per_s"), "x" * 500, "prompt[0].decode_flops_per_s must be a number, not str"),
        (("prompt", 0, "residual_pct"), [1], "prompt[0].residual_pct must be a number, not list"),
        (("batch", 0, "batch_size"), 0, "batch[0].batch_size must be from 1 to"),
        (("batch", 0, "per_seq_tok_s"), "x", "batch[0].per_seq_tok_s must be a number, not str"),
        (("history", 0, "turn"), "x", "history[0].turn must be a whole number, not str"),
        (("precision", 0, "weight_bytes"), 1e308, "precision[0].weight_bytes must be above 0 and at most 1e+24"),
        (("precision", 0, "dtype"), 4, "precision[0].dtype must be text, not int"),
        (("ceilings", "ceilings", "dram", "value"), 0.0, "ceilings.ceilings.dram.value must be from 1e+06 to 1e+18"),
        (("ceilings", "ceilings", "dram", "unit"), "GB", "ceilings.ceilings.dram.unit must be one of flop/s, byte/s"),
        (("ceilings", "threads"), "x", "ceilings.threads must be a whole number, not str"),
        (("machine", "bandwidth"), "fast", "machine.bandwidth must be an object, not str"),
        (("machine", "cpu_share"), "x", "machine.cpu_share must be a number, not str"),
        (("model", "arithmetic", "layers"), None, "model.arithmetic.layers must be a whole number, not null"),
        (("verdicts", 0, "evidence"), -1, "verdicts[0].evidence must be text, not int"),
        (("verdicts", 0, "holds"), "yes", "verdicts[0].holds must be true or false, not str"),
        (("notes",), 3, "notes must be a list, not int"),
    ],
)
def test_a_value_the_lab_cannot_draw_is_refused_in_words(path, value, said):
    with pytest.raises(LabResultsError) as refused:
        results_from_json(with_change(path, value))
    assert said in str(refused.value)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 200  # a bad value is shown cut short


def test_a_row_without_what_its_plot_reads_is_refused():
    document = copy.deepcopy(GOOD)
    del document["batch"][0]["per_seq_tok_s"]
    with pytest.raises(LabResultsError, match=r"batch\[0\] has no per_seq_tok_s"):
        results_from_json(json.dumps(document))


def test_a_value_not_measured_is_null_and_drawn_as_no_point():
    """A run writes null where it could not measure (a rate over no time): loaded, and the plots leave it out."""
    results = results_from_json(with_change(("history", 0, "ttft_on_s"), None))
    assert results.history[0]["ttft_on_s"] is None


@pytest.mark.plots
def test_the_lab_keeps_what_it_showed_when_a_file_is_refused(qtbot, tmp_path):
    from gui.lab.lab_tab import LabTab

    tab = LabTab()
    qtbot.addWidget(tab)
    tab.resize(1200, 900)
    tab.show()
    qtbot.waitExposed(tab)
    try:
        good, bad = tmp_path / "good.json", tmp_path / "bad.json"
        save_results_json(load_results_json_text(json.dumps(GOOD), tmp_path), good)
        tab.load_json(good)
        bad.write_text(with_change(("prompt", 0, "tpot_s"), -0.5), encoding="utf-8")
        with pytest.raises(LabResultsError, match=r"prompt\[0\]\.tpot_s must be above 0"):
            tab.load_json(bad)
        assert list(tab.prompt_plot.ttft_item.getData()[0]) == [15]
        assert tab.results is not None and tab.results.prompt[0]["tpot_s"] == 0.0091
    finally:
        tab.shutdown()


def load_results_json_text(text: str, folder) -> LabResults:
    path = folder / "source.json"
    path.write_text(text, encoding="utf-8")
    return load_results_json(path)
