"""The main window's first size: most of the screen it opens on, and never more than fits on it."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

# Of the screen's available area (without panels and docks): the rest is left for the window's
# frame, which Qt does not count in resize(), and for a glimpse of the desktop.
SCREEN_SHARE = 0.9
# On a large screen a wider window only spreads the plots thin.
LARGEST = QSize(1600, 1000)


def initial_window_size(available: QRect, largest: QSize = LARGEST) -> QSize:
    return QSize(
        min(int(available.width() * SCREEN_SHARE), largest.width()),
        min(int(available.height() * SCREEN_SHARE), largest.height()),
    )


def fit_to_screen(window: QWidget) -> None:
    """Resize the window for the screen it is on (the primary screen before it is shown)."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is not None:
        window.resize(initial_window_size(screen.availableGeometry()))
