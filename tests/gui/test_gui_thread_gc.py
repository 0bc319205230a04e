"""Cycles holding Qt objects are collected on the GUI thread only, never by a worker that happens to allocate."""

import gc
import threading

from PySide6.QtCore import QObject

from gui.gui_thread_gc import GuiThreadCollector


class QtCycle:
    """Garbage only the cycle collector can free, holding a Qt object as a window's cycles do."""

    def __init__(self, freed_on: list):
        self.me = self
        self.qt_object = QObject()
        self.freed_on = freed_on

    def __del__(self):
        self.freed_on.append(threading.current_thread())


def test_cycles_are_freed_on_the_gui_thread_while_automatic_collection_is_off(qtbot):
    gc.enable()  # as in the app; the suite itself keeps it off
    collector = GuiThreadCollector()
    collector.start()
    try:
        assert not gc.isenabled()
        freed_on: list = []
        QtCycle(freed_on)
        worker = threading.Thread(target=lambda: [[] for _ in range(200_000)])  # allocations that would trip gc
        worker.start()
        worker.join()
        assert freed_on == []
        qtbot.waitUntil(lambda: bool(freed_on), timeout=5000)
        assert freed_on == [threading.main_thread()]
    finally:
        collector.stop()
        assert gc.isenabled()  # handed back as it was
        gc.disable()


def test_a_full_collection_waits_while_a_reply_streams(qtbot):
    """Young generations are collected every tick; the full collection, due every other tick here, waits for busy
    to end."""
    streaming = [True]
    collector = GuiThreadCollector(busy=lambda: streaming[0], tick_ms=5, full_every_ticks=2)
    full_before = gc.get_stats()[2]["collections"]
    young_before = gc.get_stats()[1]["collections"]
    collector.start()
    try:
        qtbot.waitUntil(lambda: gc.get_stats()[1]["collections"] >= young_before + 6, timeout=5000)
        assert gc.get_stats()[2]["collections"] == full_before
        streaming[0] = False
        qtbot.waitUntil(lambda: gc.get_stats()[2]["collections"] > full_before, timeout=5000)
    finally:
        collector.stop()
        gc.disable()
