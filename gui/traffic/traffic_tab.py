"""The Traffic tab: a proxy between the user's tools and their server, started and stopped here, with a live table of
every request it passes, a timeline of the ones that overlap, and the chat's meter for the request selected.

The proxy runs on its own thread and event loop (core/proxy/proxy_thread.py); its events are appended to a deque
there (a thread-safe append, nothing else) and taken here by the tab's frame timer, 25 times a second, so a burst of
chunks from many streams costs the window one table update a frame, never one per chunk.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.proxy.record import ProxyEvent, ProxyRecord, RequestFinished, RequestProgress, RequestStarted
from core.proxy.trace import reply_trace
from gui.meter.meter_panel import MeterPanel
from gui.meter.trace_playback import play_trace
from gui.traffic.request_table import COLUMNS, WIDEST, RequestTable
from gui.traffic.timeline_plot import TimelinePlot
from gui.untrusted_text import plain_label
from gui.vertical_scroll import VerticalScroll

if TYPE_CHECKING:  # imported on first Start: the window starts without aiohttp
    from core.proxy.proxy_thread import ProxyThread

FRAME_MS = 40
HISTORY_SHOWN = 200  # finished requests on the meter's history plot beside the one selected
PICK_A_REQUEST = "Select a request in the table to see its meter."


class TrafficTab(QWidget):
    proxy_started = Signal(str)  # the URL the proxy listens on
    proxy_stopped = Signal()
    request_finished = Signal(object)  # ProxyRecord, once its row shows it
    request_shown = Signal(object)  # ProxyRecord, once the meter shows it

    def __init__(self, upstream: str = "", port: int = 0, parent=None):
        super().__init__(parent)
        self.proxy: ProxyThread | None = None  # while running
        self._unsubscribe: Callable[[], None] | None = None
        self._events: collections.deque[ProxyEvent] = collections.deque()
        self._finished: dict[int, ProxyRecord] = {}  # metered requests with output, for the meter's history
        self._build_widgets(upstream, port)
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_MS)
        self.frame_timer.timeout.connect(self._frame)
        self._update_controls()

    def _build_widgets(self, upstream: str, port: int) -> None:
        self.upstream_edit = QLineEdit(upstream)
        self.upstream_edit.setPlaceholderText("the server: http://127.0.0.1:11434 (Ollama) or :8080 (llama-server)")
        self.port_box = QSpinBox()
        self.port_box.setRange(0, 65535)
        self.port_box.setValue(port)
        self.port_box.setToolTip("The port your tools connect to (0: any free one).")
        self.keep_bodies_box = QCheckBox("Keep prompts and replies")
        self.keep_bodies_box.setToolTip(
            "Off: prompts and replies pass through and are not kept. API keys are never kept."
        )
        self.start_button = QPushButton("Start")
        self.stop_button = QPushButton("Stop")
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.upstream_edit.returnPressed.connect(self.start)
        form = QHBoxLayout()
        form.addWidget(plain_label("Upstream"))
        form.addWidget(self.upstream_edit, stretch=1)
        form.addWidget(plain_label("Port"))
        form.addWidget(self.port_box)
        form.addWidget(self.keep_bodies_box)
        form.addWidget(self.start_button)
        form.addWidget(self.stop_button)
        self.status_label = plain_label(
            "Latency Lab sits between your tools and your server: start it, then point your tools at it."
        )
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = RequestTable(self)
        self.table_view = QTableView()
        self.table_view.setModel(self.table)
        self.table_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table_view.verticalHeader().setVisible(False)
        self.table_view.setWordWrap(False)
        header = self.table_view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        metrics = self.table_view.fontMetrics()
        for column, name in enumerate(COLUMNS):
            if name in WIDEST:
                header.resizeSection(column, metrics.horizontalAdvance(WIDEST[name]) + 16)
        self.table_view.verticalHeader().setDefaultSectionSize(metrics.height() + 6)
        self.table_view.selectionModel().currentRowChanged.connect(self._row_chosen)
        self.timeline = TimelinePlot()
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.table_view)
        left.addWidget(self.timeline)
        left.setSizes([360, 240])
        self.meter = MeterPanel()
        self.meter_note = plain_label(PICK_A_REQUEST)
        self.meter_note.setWordWrap(True)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.meter_note)
        right_layout.addWidget(self.meter, stretch=1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(VerticalScroll(right))
        splitter.setSizes([760, 520])
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.status_label)
        layout.addWidget(splitter, stretch=1)

    # -- start and stop ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proxy is not None

    @Slot()
    def start(self) -> None:
        if self.proxy is not None:
            return
        # Imported on first use: the window starts without aiohttp.
        from core.proxy.proxy_thread import ProxyStartError, ProxyThread
        from core.proxy.upstream import BadUpstream

        try:
            proxy = ProxyThread(
                self.upstream_edit.text().strip(),
                port=self.port_box.value(),
                keep_bodies=self.keep_bodies_box.isChecked(),
            )
        except BadUpstream as error:
            self.status_label.setText(f"Not started: {error}")
            return
        self._unsubscribe = proxy.subscribe(self._events.append)  # on the proxy's thread: an append, no more
        try:
            proxy.start()
        except ProxyStartError as error:
            self._unsubscribe()
            self._unsubscribe = None
            self.status_label.setText(f"Not started: {error}")
            return
        self.proxy = proxy
        self._finished.clear()
        self.table.clear()
        self.timeline.begin(time.perf_counter_ns())
        self.meter.reset_chat()
        self.meter_note.setText(PICK_A_REQUEST)
        self.frame_timer.start()
        self.status_label.setText(
            f"Listening on {proxy.url}, forwarding to {proxy.upstream.origin}. Point your tools at {proxy.url}/v1 "
            f"(OpenAI-compatible) or {proxy.url} (Ollama)."
        )
        self._update_controls()
        self.proxy_started.emit(proxy.url)

    @Slot()
    def stop(self) -> None:
        """Stop the proxy: requests still running are cut (their server requests closed), and their rows say so."""
        proxy, self.proxy = self.proxy, None
        if proxy is None:
            return
        proxy.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.frame_timer.stop()
        self._frame()  # the last events, the cut requests' records among them
        # Every request of this run, the rows the table let go (it keeps the last MAX_ROWS) among them
        self.status_label.setText(f"Stopped. {self.table.added:,} requests passed through {proxy.url}.")
        self._update_controls()
        self.proxy_stopped.emit()

    def shutdown(self) -> None:
        """Before the window closes: the proxy's thread and the frame timer end."""
        self.stop()
        self.frame_timer.stop()

    def _update_controls(self) -> None:
        running = self.proxy is not None
        self.start_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        for field in (self.upstream_edit, self.port_box, self.keep_bodies_box):
            field.setEnabled(not running)

    # -- events ---------------------------------------------------------------------------------

    @Slot()
    def _frame(self) -> None:
        finished: list[ProxyRecord] = []
        while self._events:
            event = self._events.popleft()
            if isinstance(event, RequestStarted):
                self.table.add(event)
                self.timeline.add(event.id, event.start_ns)
            elif isinstance(event, RequestProgress):
                self.table.update(event)
                self.timeline.first_token(event.id, event.ttft_s)
            elif isinstance(event, RequestFinished):
                record = event.record
                self.table.update(record)
                end_ns = record.end_ns or time.perf_counter_ns()
                self.timeline.finish(record.id, record.start_ns, record.first_token_ns, record.e2e_s, end_ns)
                if record.api is not None and record.chunks:
                    self._finished[record.id] = record
                    while len(self._finished) > HISTORY_SHOWN:
                        del self._finished[next(iter(self._finished))]
                finished.append(record)
        self.timeline.refresh(time.perf_counter_ns())
        selected = self._selected_id()
        for record in finished:
            if record.id == selected:
                self.show_request(record)
            self.request_finished.emit(record)

    # -- the meter ------------------------------------------------------------------------------

    def _selected_id(self) -> int | None:
        row = self.table_view.currentIndex().row()
        return self.table.rows[row].id if 0 <= row < len(self.table.rows) else None

    @Slot(QModelIndex, QModelIndex)
    def _row_chosen(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.timeline.mark(self.table.id_at(current.row()))
        record = self.table.record_at(current.row())
        if record is not None:
            self.show_request(record)
        elif 0 <= current.row() < len(self.table.rows):
            self.meter.reset_chat()  # the last request's figures are not this one's
            self.meter_note.setText("This request is still running: its meter is shown when it ends.")

    def show_request(self, record: ProxyRecord) -> None:
        """The request on the meter, as a chat reply is shown: the other finished requests on its history plot."""
        self.meter.reset_chat()  # the last request's figures leave with it, whatever this one shows
        if record.api is None:
            self.meter_note.setText(f"{record.method} {record.path}: passed through, not a generation request.")
            return
        for other in self._finished.values():
            if other.id != record.id:
                self.meter.add_history(reply_trace(other), bool(other.streamed))
        trace = reply_trace(record, self._finished.values())
        play_trace(self.meter, trace, bool(record.streamed), list(record.chunk_chars))
        self.meter_note.setText(_meter_title(record))
        self.request_shown.emit(record)


def _meter_title(record: ProxyRecord) -> str:
    who = record.client_process or (record.user_agent or "a client").split(" ")[0]
    return f"Request #{record.id}: {record.model or 'no model named'}, from {who}" + (
        f" — {record.error}" if record.error else ""
    )
