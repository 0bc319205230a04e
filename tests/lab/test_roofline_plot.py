"""The Lab's roofline: every ceiling the machine measured is drawn and named."""

import pytest

from gui.lab.roofline_plot import RooflinePlot

GIGA = 1e9


def ceiling(name: str, label: str, unit: str, value: float) -> dict:
    return {"name": name, "label": label, "unit": unit, "value": value, "median": value, "passes": 3, "method": "m"}


# An AMX Xeon's: four GEMM ceilings (bfloat16's and int8's a fifth of a decade apart) and two bandwidths.
XEON = {
    "ceilings": {
        "gemm_float32": ceiling("gemm_float32", "float32 GEMM", "flop/s", 230 * GIGA),
        "gemm_bfloat16": ceiling("gemm_bfloat16", "bfloat16 GEMM", "flop/s", 2163 * GIGA),
        "gemm_int8": ceiling("gemm_int8", "int8 GEMM", "flop/s", 1367 * GIGA),
        "gemm_amx_int8": ceiling("gemm_amx_int8", "AMX int8 GEMM", "flop/s", 7031 * GIGA),
        "dram": ceiling("dram", "DRAM", "byte/s", 28.3 * GIGA),
        "llc": ceiling("llc", "last-level cache", "byte/s", 56.8 * GIGA),
    },
    "cpu": "x86_64",
    "threads": 2,
    "last_level_cache_bytes": 300 * 2**20,
    "measured_at": "2026-12-06T13:44:33+00:00",
    "others_share": 0.0,
    "loaded": False,
}


@pytest.fixture
def roofline(qtbot):
    plot = RooflinePlot()
    plot.resize(760, 320)
    plot.show()
    qtbot.waitExposed(plot)
    yield plot
    plot.close()


def test_every_measured_ceiling_has_its_line_and_its_name(roofline):
    roofline.set_ceilings(XEON)
    roofline.add_prompt_row({"prefill_intensity": 970, "prefill_flops_per_s": 175 * GIGA})
    roofline.refresh()
    drawn = [item for item in roofline.ceiling_items if len(item.xData if item.xData is not None else []) > 0]
    assert len(drawn) == 6  # the AMX and bfloat16 ceilings were left off before: four lines at most
    names = [label.toPlainText() for label in roofline.labels + roofline.slope_labels if label.isVisible()]
    for expected in ("float32 GEMM", "bfloat16 GEMM", "int8 GEMM", "AMX int8 GEMM", "DRAM", "last-level cache"):
        assert any(name.startswith(expected) for name in names), names


def test_two_close_ceilings_name_themselves_on_either_side_of_their_lines(roofline):
    roofline.set_ceilings(XEON)
    roofline.add_prompt_row({"prefill_intensity": 970, "prefill_flops_per_s": 175 * GIGA})
    roofline.refresh()
    rects = {
        label.toPlainText().split(" GEMM")[0]: label.sceneBoundingRect()
        for label in roofline.labels
        if label.isVisible() and "GEMM" in label.toPlainText()
    }
    assert len(rects) == 4
    names = list(rects)
    for index, name in enumerate(names):
        for other in names[index + 1 :]:
            assert not rects[name].intersects(rects[other]), (name, other)
