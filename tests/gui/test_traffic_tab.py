"""The Traffic tab as a user meets it: start the proxy, point a tool at it, watch the requests fill the table and the
timeline, pick one and read its meter; stop it, and close the window with it running."""

from __future__ import annotations

import re
import socket
import threading

import httpx
import pytest

from gui.meter.stat_cards import CardValue
from gui.traffic.request_table import COLUMNS
from gui.traffic.traffic_tab import TrafficTab
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

WAIT_MS = 20_000
USAGE = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}}
CHUNKS = [openai_chunk(word) for word in ("The", " sea", " is", " wide", ".")] + [USAGE, "[DONE]"]


@pytest.fixture
def tab(qtbot):
    traffic = TrafficTab()
    qtbot.addWidget(traffic)
    traffic.port_box.setValue(0)  # any free port: tests run side by side
    yield traffic
    traffic.shutdown()


def _start(qtbot, tab: TrafficTab, upstream: str) -> str:
    tab.upstream_edit.setText(upstream)
    with qtbot.waitSignal(tab.proxy_started, timeout=WAIT_MS) as started:
        tab.start_button.click()
    return started.args[0]


def _cell(tab: TrafficTab, row: int, column: str) -> str:
    return tab.table.data(tab.table.index(row, COLUMNS.index(column)))


def _refused(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError:
        return True
    return False


def test_a_request_through_the_tab_is_listed_drawn_and_metered(qtbot, tab):
    with ScriptedServer(Script(chunks=CHUNKS, gap_s=0.01)) as server:
        url = _start(qtbot, tab, server.url)
        assert not tab.start_button.isEnabled() and not tab.upstream_edit.isEnabled()
        assert url in tab.status_label.text() and f"{url}/v1" in tab.status_label.text()
        with qtbot.waitSignal(tab.request_finished, timeout=WAIT_MS) as finished:
            reply = httpx.post(f"{url}/v1/chat/completions", json={"model": "sea-7b", "stream": True}, timeout=10)
        record = finished.args[0]
    assert reply.status_code == 200 and record.output_tokens == 5
    assert _cell(tab, 0, "Model") == "sea-7b" and _cell(tab, 0, "Status") == "200"
    assert _cell(tab, 0, "Tokens") == "12 → 5" and _cell(tab, 0, "In flight") == "0 (0)"
    assert _cell(tab, 0, "TTFT").endswith(" ms") and _cell(tab, 0, "Request") == "POST /v1/chat/completions"
    assert "python" in _cell(tab, 0, "Client")  # this test's own process, read from /proc
    ((wait_start, wait_end, lane),) = tab.timeline.bars(tab.timeline.wait_bars)
    ((output_start, output_end, _),) = tab.timeline.bars(tab.timeline.output_bars)
    # The bars are (start, width) in float seconds: the first ends where the second starts, to rounding.
    assert lane == record.id and wait_start < wait_end <= output_end
    assert wait_end == pytest.approx(output_start, abs=1e-9) and output_start <= output_end
    assert output_end - wait_start == pytest.approx(record.e2e_s, abs=1e-6)

    with qtbot.waitSignal(tab.request_shown, timeout=WAIT_MS):
        tab.table_view.selectRow(0)
    cards = tab.meter.cards.cards
    assert cards["ttft"].value == pytest.approx(record.ttft_s, abs=1e-9)
    assert cards["tpot"].value == pytest.approx(record.tpot_s, abs=1e-9) and cards["tokens"].value == 5
    # A point per gap between the chunks, none between chunks the proxy read together (one stamp).
    assert tab.meter.interval_plot.marker_count() == sum(gap > 0 for gap in record.itl_s) > 0
    # The server sent no cached count: said in the card, whole ("cached: not reported" was cut at the card's edge).
    value = cards["prompt"].findChild(CardValue)
    assert value.text() == "12 tokens, ? cached" and "sent no count of cached prompt" in cards["prompt"].toolTip()
    assert value.fontMetrics().horizontalAdvance(value.text()) <= value.width()
    assert tab.meter.visible_plot.points()[1].max() == len("The sea is wide.")  # what the user saw, bodies not kept
    assert tab.meter.diagnosis_line.top.text()  # the request diagnosed as a chat reply is
    assert tab.meter_note.text().startswith(f"Request #{record.id}: sea-7b")
    # The chosen request is found on the timeline too: a band across its lane.
    assert tab.timeline.chosen_band.isVisible()
    assert tab.timeline.chosen_band.getRegion() == pytest.approx((lane - 0.5, lane + 0.5))

    # A request passed through unmetered: the meter no longer shows the last one's figures under its line.
    with qtbot.waitSignal(tab.request_finished, timeout=WAIT_MS):
        assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 200
    passed = next(row for row in range(tab.table.rowCount()) if _cell(tab, row, "Request") == "GET /v1/models")
    tab.table_view.selectRow(passed)
    assert tab.meter_note.text() == "GET /v1/models: passed through, not a generation request."
    assert cards["ttft"].value is None and cards["prompt"].text() == "–" and not tab.meter.diagnosis_line.isVisible()
    assert tab.meter.interval_plot.marker_count() == 0
    passed_id = tab.table.id_at(passed)
    assert passed_id != record.id and tab.timeline.chosen_band.getRegion() == pytest.approx(
        (passed_id - 0.5, passed_id + 0.5)
    )

    with qtbot.waitSignal(tab.proxy_stopped, timeout=WAIT_MS):
        tab.stop_button.click()
    assert _refused(url) and not tab.frame_timer.isActive() and tab.start_button.isEnabled()


def test_requests_that_overlap_are_seen_side_by_side(qtbot, tab):
    """Three streams held open by the server: three running rows, in flight 0, 1 and 2 at their start, and three
    bars that overlap on the timeline; stopping the proxy cuts them and their rows say so."""
    script = Script(chunks=[openai_chunk("first")], repeat=b": still here\n\n", pace_s=0.02)
    with ScriptedServer(script) as server:
        url = _start(qtbot, tab, server.url)
        opened = [threading.Event() for _ in range(3)]

        def stream(index: int) -> None:
            body = {"model": f"m{index}", "stream": True}
            try:
                with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as response:
                    for line in response.iter_lines():
                        if "first" in line:
                            opened[index].set()
            except httpx.HTTPError:
                pass  # cut when the proxy stops: what the test does next
            opened[index].set()

        threads = [threading.Thread(target=stream, args=(index,)) for index in range(3)]
        for index, thread in enumerate(threads):
            thread.start()
            assert opened[index].wait(10)
        qtbot.waitUntil(lambda: len(tab.timeline.bars(tab.timeline.output_bars)) == 3, timeout=WAIT_MS)
        assert [_cell(tab, row, "Status") for row in range(3)] == ["running"] * 3
        assert all(re.fullmatch(r"\d\d:\d\d:\d\d", _cell(tab, row, "Started")) for row in range(3))  # was empty
        assert [_cell(tab, row, "In flight")[0] for row in range(3)] == ["0", "1", "2"]
        bars = tab.timeline.bars(tab.timeline.output_bars)
        assert max(start for start, _, _ in bars) < min(end for _, end, _ in bars)  # all three at once
        with qtbot.waitSignal(tab.proxy_stopped, timeout=WAIT_MS):
            tab.stop_button.click()
        for thread in threads:
            thread.join(10)
    assert all("proxy stopped" in _cell(tab, row, "Note") for row in range(3))


def test_a_request_that_shared_the_server_is_diagnosed_so_and_weighed_against_one_alone(qtbot, tab):
    """Two streams held open together by the server, then one alone: the shared one's diagnosis says it shared the
    server, first with nothing alone to weigh it against, then against the one alone."""
    with ScriptedServer(Script(chunks=CHUNKS, pause_after=2, gap_s=0.05)) as server:
        url = _start(qtbot, tab, server.url)
        body = {"model": "sea-7b", "stream": True}

        def stream() -> None:
            httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)

        def ended(rows: int) -> bool:
            return tab.table.rowCount() == rows and all(_cell(tab, row, "Status") == "200" for row in range(rows))

        threads = [threading.Thread(target=stream) for _ in range(2)]
        for thread in threads:
            thread.start()
        qtbot.waitUntil(lambda: len(tab.timeline.bars(tab.timeline.output_bars)) == 2, timeout=WAIT_MS)
        server.release.set()  # both were streaming at once: now they end
        for thread in threads:
            thread.join(10)
        qtbot.waitUntil(lambda: ended(2), timeout=WAIT_MS)
        with qtbot.waitSignal(tab.request_shown, timeout=WAIT_MS):
            tab.table_view.selectRow(0)
        said = tab.meter.diagnosis_line.top.text()
        assert "shared the server with up to 1 other request" in said and "no request to this model ran alone" in said

        server.script = Script(chunks=CHUNKS, gap_s=0.001)  # alone, a fiftieth of the gaps the two shared
        stream()
        qtbot.waitUntil(lambda: ended(3), timeout=WAIT_MS)
        with qtbot.waitSignal(tab.request_shown, timeout=WAIT_MS):
            tab.table_view.selectRow(1)
        said = tab.meter.diagnosis_line.top.text()
        assert "shared the server with up to 1 other request" in said and "for this model's requests alone" in said


def test_a_bad_upstream_or_a_taken_port_is_said_and_nothing_starts(qtbot, tab):
    tab.upstream_edit.setText("ftp://example.invalid")
    tab.start_button.click()
    assert (
        tab.status_label.text().startswith("Not started: the server's address 'ftp://example.invalid' will not do")
        and not tab.running
    )
    assert "--upstream" not in tab.status_label.text()  # the window has no command-line flags
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        tab.upstream_edit.setText("http://127.0.0.1:9")
        tab.port_box.setValue(taken.getsockname()[1])
        tab.start_button.click()
    assert tab.status_label.text().startswith("Not started: could not listen") and not tab.running
    assert tab.start_button.isEnabled() and not tab.frame_timer.isActive()


def test_closing_the_window_stops_its_proxy_and_keeps_its_settings(qtbot, open_window):
    window = open_window()
    traffic = window.traffic_tab
    traffic.port_box.setValue(0)
    with ScriptedServer(Script(chunks=CHUNKS)) as server:
        url = _start(qtbot, traffic, server.url)
        proxy = traffic.proxy
        window.close()
        assert not proxy.running and _refused(url) and not traffic.frame_timer.isActive()
    reopened = open_window()
    assert reopened.traffic_tab.upstream_edit.text() == server.url and reopened.traffic_tab.port_box.value() == 0


def test_stopping_counts_every_request_of_the_run_not_the_rows_kept(qtbot, tab, monkeypatch):
    import gui.traffic.request_table as request_table

    monkeypatch.setattr(request_table, "MAX_ROWS", 1)
    with ScriptedServer(Script(chunks=CHUNKS)) as server:
        url = _start(qtbot, tab, server.url)
        for _ in range(2):
            with qtbot.waitSignal(tab.request_finished, timeout=WAIT_MS):
                httpx.post(f"{url}/v1/chat/completions", json={"model": "sea-7b", "stream": True}, timeout=10)
        with qtbot.waitSignal(tab.proxy_stopped, timeout=WAIT_MS):
            tab.stop_button.click()
    assert len(tab.table.rows) == 1 and tab.status_label.text() == f"Stopped. 2 requests passed through {url}."


def test_the_table_keeps_the_last_rows_and_updates_each_in_its_place(qtbot, monkeypatch):
    import gui.traffic.request_table as request_table
    from core.proxy.record import RequestProgress, RequestStarted

    monkeypatch.setattr(request_table, "MAX_ROWS", 3)
    table = request_table.RequestTable()
    for request_id in range(1, 6):
        table.add(
            RequestStarted(request_id, "POST", "/v1/chat/completions", "openai-chat", f"m{request_id}", None, 0, 0)
        )
    table.update(RequestProgress(4, 7, 0.01, 0.02, 0.5, 1))
    table.update(RequestProgress(1, 9, 0.01, 0.02, 0.5, 1))  # dropped already: nothing changes
    assert [row.id for row in table.rows] == [3, 4, 5] and table.added == 5  # what passed, not what is kept
    assert [row.progress.chunks if row.progress else None for row in table.rows] == [None, 7, None]
    table.clear()
    table.add(RequestStarted(6, "POST", "/api/chat", "ollama-chat", "m6", None, 0, 0))
    table.update(RequestProgress(6, 2, 0.01, 0.02, 0.1, 0))
    assert table.rows[0].progress.chunks == 2
