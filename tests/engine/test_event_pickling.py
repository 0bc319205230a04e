"""Every reply event crosses the engine's pipe whole: pickled by its fields, read back equal, with every field."""

import dataclasses
import pickle

import pytest

from core.engine.messages import JobEvent
from core.timing import events

EXAMPLES = [
    events.TokenEvent(3, 1234, " keeper", 111, chunk=2, reasoning=True, drafted=True),
    events.FinishedEvent(events.StopReason.STOPPED, 12, 222, tail_text="é", error="none"),
    events.PrefillProgress(7, 30, 333),
    events.ComputeStarted(444),
    events.ServerReport("llama.cpp", 50, 12, 555, 13, {"prompt_ms": 1.5}),
    events.CpuUsage(0.75, 1.0, 2),
    events.PromptReady(50, "older turns left out", "lean", 666),
    events.ReplyRefused("the prompt is longer than the context"),
    events.PromptCacheReport(50, 40, "reused", break_at=40, source="server", timestamp_ns=777, memory_bytes=8),
    events.SpeculationReport("ngram", 36, 34, 9, note="off for sampling"),
]


def test_the_examples_cover_every_event():
    assert {type(event) for event in EXAMPLES} == set(events.ReplyEventKind.__args__)


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda event: type(event).__name__)
def test_an_event_reads_back_equal_field_by_field(event):
    message = pickle.loads(pickle.dumps(JobEvent(9, event), protocol=pickle.HIGHEST_PROTOCOL))
    assert message == JobEvent(9, event) and type(message.event) is type(event)
    for field in dataclasses.fields(event):
        assert getattr(message.event, field.name) == getattr(event, field.name)


def test_the_window_reads_every_event_whole_however_the_pipe_cuts_the_bytes():
    """The engine's frames, arriving in pieces: each read hands on only whole events, in order, and keeps the rest."""
    from core.framing import FrameDecoder, encode

    sent = [JobEvent(9, event) for event in EXAMPLES]
    stream = b"".join(encode(message) for message in sent)
    for piece in (1, 7, 64, len(stream)):
        decoder, received = FrameDecoder(), []
        for start in range(0, len(stream), piece):
            decoder.feed(stream[start : start + piece])
            received += decoder.messages()
        assert received == sent and not decoder.pending_bytes, piece
