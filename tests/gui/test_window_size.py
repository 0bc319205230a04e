"""The window opens at a size that fits the screen it is on (issue #14)."""

from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QWidget

from gui.window_size import LARGEST, fit_to_screen, initial_window_size

# Xvfb's screen in tools/screenshot.sh, where the window used to open 1,320 pixels wide.
XVFB_SCREEN = QRect(0, 0, 1400, 950)


def _fits(size: QSize, available: QRect) -> bool:
    return 0 < size.width() <= available.width() and 0 < size.height() <= available.height()


def test_the_size_leaves_room_on_small_and_ordinary_screens():
    for available in (QRect(0, 0, 1024, 600), QRect(0, 27, 1366, 741), XVFB_SCREEN, QRect(1920, 0, 1920, 1050)):
        size = initial_window_size(available)
        assert _fits(size, available)
        assert size.width() < available.width() and size.height() < available.height(), available
    assert initial_window_size(XVFB_SCREEN) == QSize(1260, 855)


def test_a_large_screen_gets_the_largest_size_not_all_of_it():
    assert initial_window_size(QRect(0, 0, 3840, 2100)) == LARGEST


def test_a_window_is_resized_for_the_screen_it_is_on(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    fit_to_screen(widget)
    available = widget.screen().availableGeometry()
    assert widget.size() == initial_window_size(available) and _fits(widget.size(), available)


def test_the_chat_window_can_be_as_narrow_as_it_opens_on_a_1400_pixel_screen(window):
    # A minimum wider than the size asked for wins over resize(): the window opened 1,320 wide at 1400.
    wanted = initial_window_size(XVFB_SCREEN)
    minimum = window.minimumSizeHint()
    assert minimum.width() <= wanted.width() and minimum.height() <= wanted.height()


def test_the_whole_window_fits_a_laptop_screen(qtbot, window):
    """Its least size used to be 1,245 x 838 (the meter's cards and plots, and the Lab's three rows of plots): on a
    1366 x 768 laptop the window ran off the bottom of the screen. Those parts now scroll up and down instead."""
    laptop = QRect(0, 27, 1366, 741)
    for tab in (window.lab_tab, window.tabs.widget(0)):
        window.tabs.setCurrentWidget(tab)
        minimum = window.minimumSizeHint()
        assert minimum.width() <= laptop.width() and minimum.height() <= initial_window_size(laptop).height(), tab
    # On the 1400 x 950 screen the meter shows whole: neither squeezed sideways nor scrolled.
    window.resize(initial_window_size(XVFB_SCREEN))
    meter_area = window.meter.parentWidget().parentWidget()
    qtbot.waitUntil(lambda: not meter_area.verticalScrollBar().isVisible(), timeout=5_000)
    assert meter_area.viewport().height() >= window.meter.minimumSizeHint().height()
    assert meter_area.viewport().width() >= window.meter.minimumSizeHint().width()


def test_a_long_model_path_given_at_launch_does_not_widen_the_window(open_window, tiny_model):
    long_path = "/a/very/long/folder/path/" * 12 + "model-Q4_K_M.gguf"
    widths = {}
    for name, overrides in (("default", {}), ("long path", {"model_spec": long_path})):
        win = open_window(tiny_model, overrides=overrides)
        widths[name] = win.minimumSizeHint().width()
        win.close()
    # The path at first show used to widen the model row, and the meter was pushed off a 1400-pixel screen.
    assert widths["long path"] <= widths["default"]
