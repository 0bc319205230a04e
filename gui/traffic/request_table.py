"""The Traffic tab's table: one row per request through the proxy, filled in as its events arrive.

Rows are kept for the last MAX_ROWS requests, so a proxy left running for days holds bounded memory. Every text shown
came from a client or a server (model names, user agents, errors): it is shown as plain text, never interpreted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from core.proxy.log import span_text, tokens_text
from core.proxy.record import DEFINITIONS, ProxyRecord, RequestProgress, RequestStarted

MAX_ROWS = 1000
# The figures first: a narrow window shows them before it scrolls.
COLUMNS = ("#", "Model", "Status", "TTFT", "TPOT", "E2E", "Tokens", "In flight", "Client", "Request", "Started", "Note")
TOOLTIPS = {
    "TTFT": DEFINITIONS["ttft_s"],
    "TPOT": DEFINITIONS["tpot_s"],
    "E2E": DEFINITIONS["e2e_s"],
    "Tokens": "Prompt tokens (cached) → output tokens. " + DEFINITIONS["output_tokens"],
    "In flight": DEFINITIONS["in_flight_at_start"]
    + " In brackets: "
    + DEFINITIONS["max_in_flight"][0].lower()
    + DEFINITIONS["max_in_flight"][1:],
}
# What each column's widest usual value looks like: the columns are sized to these once, not to their contents on
# every update (that reads every row's text each time the table changes).
WIDEST = {
    "#": "00000",
    "Started": "00:00:00",
    "Client": "python3.11 [123456]",
    "Model": "llama-3.2-1b-instruct",
    "Request": "POST /v1/chat/completions",
    "Status": "running",
    "In flight": "In flight",
    "TTFT": "000.0 ms",
    "TPOT": "000.0 ms",
    "E2E": "000.0 ms …",
    "Tokens": "1234 (1200 cached) → 256",
}
Index = QModelIndex | QPersistentModelIndex
TOP = QModelIndex()  # the table's root: a flat table has no other parent


@dataclass
class Row:
    started: RequestStarted
    progress: RequestProgress | None = None
    record: ProxyRecord | None = None
    # When the request began on the wall clock (its event carries the monotonic one): the Started column was empty
    # until the request ended.
    started_at: float = 0.0

    @property
    def id(self) -> int:
        return self.started.id


class RequestTable(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[Row] = []
        # A request's id → its row's place among every row ever added; less the rows dropped from the top, its row
        # number now (no search of the list on each update).
        self._by_id: dict[int, int] = {}
        self._added = 0
        self._dropped = 0

    def rowCount(self, parent: Index = TOP) -> int:  # noqa: N802 - Qt's name
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = TOP) -> int:  # noqa: N802 - Qt's name
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return TOOLTIPS.get(COLUMNS[section])
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        row = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return cell_text(row, COLUMNS[index.column()])
        if role == Qt.ItemDataRole.ToolTipRole and COLUMNS[index.column()] in ("Client", "Note"):
            return cell_text(row, COLUMNS[index.column()]) or None
        return None

    @property
    def added(self) -> int:
        """Requests added since the table was cleared, the rows dropped from the top among them."""
        return self._added

    def id_at(self, row: int) -> int | None:
        return self.rows[row].id if 0 <= row < len(self.rows) else None

    def record_at(self, row: int) -> ProxyRecord | None:
        return self.rows[row].record if 0 <= row < len(self.rows) else None

    def add(self, event: RequestStarted) -> None:
        if len(self.rows) >= MAX_ROWS:
            self.beginRemoveRows(QModelIndex(), 0, 0)
            dropped = self.rows.pop(0)
            del self._by_id[dropped.id]
            self._dropped += 1
            self.endRemoveRows()
        self.beginInsertRows(QModelIndex(), len(self.rows), len(self.rows))
        self.rows.append(Row(event, started_at=time.time() - (time.perf_counter_ns() - event.start_ns) / 1e9))
        self._by_id[event.id] = self._added
        self._added += 1
        self.endInsertRows()

    def update(self, event: RequestProgress | ProxyRecord) -> None:
        """A running request's figures so far, or its record once it ended."""
        added = self._by_id.get(event.id)
        if added is None:
            return  # dropped from the table already
        number = added - self._dropped
        row = self.rows[number]
        if isinstance(event, ProxyRecord):
            row.record = event
        else:
            row.progress = event
        self.dataChanged.emit(self.index(number, 0), self.index(number, len(COLUMNS) - 1))

    def clear(self) -> None:
        self.beginResetModel()
        self.rows.clear()
        self._by_id.clear()
        self._added = self._dropped = 0
        self.endResetModel()


def cell_text(row: Row, column: str) -> str:
    started, progress, record = row.started, row.progress, row.record
    if column == "#":
        return str(started.id)
    if column == "Started":
        return time.strftime("%H:%M:%S", time.localtime(record.started_at if record else row.started_at))
    if column == "Client":
        if record and record.client_process:
            return f"{record.client_process} [{record.client_pid}]"
        return (started.user_agent or "").split(" ")[0][:60]
    if column == "Model":
        return (record.model if record else started.model) or ""
    if column == "Request":
        return f"{started.method} {started.path}"[:120]
    if column == "Status":
        if record is None:
            return "running"
        return str(record.status) if record.status else "—"
    if column == "In flight":
        most = record.max_in_flight if record else progress.max_in_flight if progress else started.in_flight_at_start
        return f"{started.in_flight_at_start} ({most})"
    if started.api is None:  # passed through unmetered: only its total time
        return span_text(record.total_s) if record and column == "E2E" else ""
    if column == "TTFT":
        ttft = record.ttft_s if record else progress.ttft_s if progress else None
        return span_text(ttft)
    if column == "TPOT":
        return span_text(record.tpot_s) if record else ""
    if column == "E2E":
        if record:
            return span_text(record.e2e_s)
        return f"{span_text(progress.elapsed_s)} …" if progress else "…"
    if column == "Tokens":
        if record:
            return tokens_text(record, unit=False)
        return f"{progress.chunks} chunks …" if progress else ""
    if column == "Note" and record:
        return " · ".join(note for note in (record.error, record.meter_note) if note)
    return ""
