"""Tick labels far enough apart: the round spacings, and which values are labelled on a short axis."""

from gui.plotting.spaced_axis import label_spacing, labelled_subset, wider_spacing

LABEL_PX = 11.2  # pyqtgraph's text rect for the app's tick font


def test_spacings_widen_in_round_steps():
    assert [wider_spacing(value) for value in (0.5, 1, 2, 5, 10, 200, 500)] == [1, 2, 5, 10, 20, 500, 1000]


def test_a_tall_axis_keeps_pyqtgraphs_spacing():
    assert label_spacing(0, 1000, 300, 100, LABEL_PX) == (100, 0.0)  # 30 px apart


def test_a_short_axis_labels_round_values_a_label_apart():
    assert label_spacing(0, 1000, 100, 100, LABEL_PX) == (200, 0.0)  # 100 would be 10 px apart: 200 is 20
    # At 60 px, 200 is 12 px (too close) and 500 leaves one value inside the axis: that one, alone.
    assert label_spacing(0, 1000, 60, 100, LABEL_PX) == (10000, 500)


def test_where_one_label_fits_it_is_one_round_value_inside_the_axis():
    # The meter's least "what the user saw" height: 31 px for 0-2,048 characters (padded).
    spacing, offset = label_spacing(-40.96, 2088.96, 31.4, 200, LABEL_PX)
    assert offset == 1000 and spacing > 2130  # one tick, at 1,000


def test_decades_on_a_short_axis_keep_every_other_one_inside():
    decades = [(power, f"10^{power}") for power in range(4)]
    shown = labelled_subset(decades, -0.24, 3.24, 30, LABEL_PX)  # 8.6 px a decade
    assert len(shown) == 2 and shown in (decades[0::2], decades[1::2])
    assert labelled_subset(decades, -0.24, 3.24, 150, LABEL_PX) == decades


def test_a_log_axis_under_two_decades_labels_no_value_over_another(qtbot):
    """The Lab's weight-bytes plot: 60 to 400 MB on a 380-pixel axis, where pyqtgraph labelled 7, 8 and 9 x 10 and
    100 into one smudge. The labels drawn do not overlap, and the decade is one of them."""
    import numpy as np
    import pyqtgraph as pg

    from gui.plotting.plot_style import style_plot

    plot = pg.PlotWidget()
    style_plot(plot, title="t", bottom="weight MB (log scale)", left="tok/s", tooltip="", log_x=True, log_y=True)
    plot.plot(np.array([96.4, 135.0, 269.0]), np.array([118.0, 41.0, 28.0]), pen=None, symbol="o")
    plot.setXRange(np.log10(60), np.log10(400), padding=0)
    plot.resize(380, 210)
    plot.show()
    qtbot.waitExposed(plot)
    axis = plot.getPlotItem().getAxis("bottom")
    image = pg.QtGui.QImage(10, 10, pg.QtGui.QImage.Format.Format_ARGB32)  # held: the painter draws on it
    painter = pg.QtGui.QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    labels = [text for _, _, text in texts]
    rects = [rect for rect, _, _ in texts]
    assert "10²" in labels and len(labels) >= 3
    assert not any(a.intersects(b) for index, a in enumerate(rects) for b in rects[index + 1 :]), labels
    plot.close()
