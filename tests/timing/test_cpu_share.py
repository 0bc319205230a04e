"""What a reply's threads got of the CPU: the share, the note when other programs took it, and where it is kept."""

import json

import pytest

from core.timing.cpu_share import WAIT_POLICY_ADVICE, contention_note, share
from core.timing.events import CpuUsage, FinishedEvent, StopReason, TokenEvent
from core.timing.export import traces_to_json
from core.timing.trace import ReplyTrace
from core.timing.trace_codec import trace_from_dict, trace_to_dict

MS = 1_000_000


def trace_with(cpu_s: float, wall_s: float = 1.0, threads: int = 2, window_cpu_s: float | None = None):
    trace = ReplyTrace(0, 10)
    for index in range(3):
        trace.record(TokenEvent(index, index, "x", (100 + 450 * index) * MS))
    trace.record(CpuUsage(cpu_s, wall_s, threads))
    trace.record(FinishedEvent(StopReason.MAX_TOKENS, 3, 1001 * MS))
    trace.window_cpu_s = window_cpu_s
    return trace


@pytest.mark.parametrize(
    "cpu_s, expected, note",
    [
        (1.96, 0.98, None),  # alone on the machine: both threads busy
        (1.5, 0.75, None),  # at the edge: not marked
        (0.78, 0.39, "other programs took 61% of the CPU during this reply; its TPOT is not the model's"),
    ],
)
def test_the_share_and_its_note_follow_the_numbers(cpu_s, expected, note):
    trace = trace_with(cpu_s)
    assert trace.cpu_share == pytest.approx(expected)
    said = contention_note(trace.cpu_share)
    assert said == note if note is None else said.startswith(note)


def test_nothing_measured_says_nothing():
    assert ReplyTrace(0, 1).cpu_share is None and contention_note(None) is None
    assert share(1.0, 0.0, 2) is None and share(1.0, 1.0, 0) is None


def test_the_window_share_is_in_cores_over_the_replys_wall_time():
    trace = trace_with(1.9, window_cpu_s=0.2)  # the last token at 1.0 s after the request
    assert trace.window_cpu_share == pytest.approx(0.2)


def test_exports_and_saved_chats_keep_it():
    trace = trace_with(0.78, window_cpu_s=0.25)
    document = json.loads(traces_to_json([trace]))
    cpu = document["replies"][0]["cpu"]
    assert cpu["cpu_share"] == pytest.approx(0.39) and cpu["contention"].startswith("other programs took 61%")
    assert cpu["window_cpu_share"] == pytest.approx(0.25)
    assert "cpu.cpu_share" in document["definitions"]
    again = trace_from_dict(json.loads(json.dumps(trace_to_dict(trace))), "reply")
    assert again.cpu_share == pytest.approx(0.39) and again.window_cpu_s == pytest.approx(0.25)


def test_a_contended_note_says_how_to_let_the_threads_sleep_unless_they_already_do():
    advised = contention_note(0.39, wait_policy="")
    assert advised.endswith(WAIT_POLICY_ADVICE) and "OMP_WAIT_POLICY=PASSIVE" in advised
    assert WAIT_POLICY_ADVICE not in contention_note(0.39, wait_policy="passive")
    assert contention_note(0.9, wait_policy="") is None
