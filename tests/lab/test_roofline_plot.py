"""The Lab's roofline: every ceiling the machine measured is drawn and named."""

import math

import pytest
from PySide6.QtCore import QPointF

from gui.lab.roofline_plot import RooflinePlot
from tests.support.roofline_facts import GIGA, XEON_AMX, ceilings_document

XEON = ceilings_document(XEON_AMX)


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


def test_no_label_is_written_over_a_measured_point(roofline):
    """A 7B's decode sat under the DRAM slope's name, and its 512-token prefill on the int8 GEMM's: each name now
    slides along its line to a place clear of the points."""
    roofline.set_ceilings(XEON)
    for tokens, rate in ((50, 400), (512, 900)):
        roofline.add_prompt_row(
            {
                "prefill_intensity": tokens * 1.9,
                "prefill_flops_per_s": rate * GIGA,
                "decode_intensity": 1.9,
                "decode_flops_per_s": 1.9 * 24 * GIGA,
            }
        )
    roofline.refresh()
    view = roofline.getViewBox()
    spots = [view.mapViewToScene(QPointF(math.log10(x), math.log10(y))) for x, y in roofline.points()]
    labels = [label for label in roofline.labels + roofline.slope_labels if label.isVisible()]
    assert len(labels) == 6
    for label in labels:
        label.updateTransform(force=True)
        assert not any(label.sceneBoundingRect().contains(spot) for spot in spots), label.toPlainText()
        assert view.sceneBoundingRect().contains(label.sceneBoundingRect().center())  # still on the plot
