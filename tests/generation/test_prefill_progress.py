"""The prompt's pass reports its progress layer by layer, in both decode loops, and reaches 100% exactly as it ends."""

import time

import pytest

from core.generation.local_reply import LocalReply
from core.settings import GenerationSettings
from core.timing.events import ComputeStarted, FinishedEvent, PrefillProgress, TokenEvent
from core.timing.trace_codec import TraceFileError, trace_from_dict, trace_to_dict
from tests.generation.test_generation import prompt_ids, run


def first_stamp(module, stamps):
    """A forward hook that stamps the first call only (the prompt's pass)."""

    def hook(*_):
        if not stamps:
            stamps.append(time.perf_counter_ns())

    return module.register_forward_hook(hook)


@pytest.mark.parametrize("loop", ["lean", "generate"])
def test_progress_rises_layer_by_layer_and_reaches_100_percent_as_the_prefill_ends(tiny_model, loop):
    ids = prompt_ids(tiny_model, "Tell me about lighthouses.")
    generation = LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=4, decode_loop=loop))
    layers = tiny_model.model.model.layers
    last_layer_done, head_started = [], []
    hooks = [
        first_stamp(layers[-1].mlp.down_proj, last_layer_done),
        tiny_model.model.model.norm.register_forward_pre_hook(
            lambda *_: head_started.append(time.perf_counter_ns()) if not head_started else None
        ),
    ]
    try:
        trace, events = run(generation)
    finally:
        for hook in hooks:
            hook.remove()
    assert trace.output_tokens >= 1 and trace.error is None
    seen = [event for event in events if not isinstance(event, (TokenEvent, FinishedEvent))]
    assert isinstance(seen[0], ComputeStarted) and trace.compute_started_ns == seen[0].timestamp_ns
    progress = [event for event in seen if isinstance(event, PrefillProgress)]
    assert [(p.layers_done, p.layers_total) for p in progress] == [(0, 2), (1, 2), (2, 2)]  # once per layer, then done
    assert trace.prefill_progress == [(p.timestamp_ns, p.fraction) for p in progress]
    stamps = [stamp for stamp, _ in trace.prefill_progress]
    assert stamps == sorted(stamps)
    # 100% after the prompt's last layer and before the final norm and head: the pass has ended.
    assert last_layer_done[0] <= stamps[-1] <= head_started[0] <= trace.timestamps_ns[0]
    # One stream: the progress comes in order with the tokens, all of it before the first.
    first_token = next(index for index, event in enumerate(events) if isinstance(event, TokenEvent))
    assert max(index for index, event in enumerate(events) if isinstance(event, PrefillProgress)) < first_token


@pytest.mark.parametrize("loop", ["lean", "generate"])
def test_a_stop_during_prefill_ends_the_progress_short_of_100_percent(tiny_model, loop):
    ids = prompt_ids(tiny_model, "Tell me about lighthouses.")
    generation = LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=20, decode_loop=loop))
    hook = tiny_model.model.model.layers[0].mlp.down_proj.register_forward_hook(lambda *_: generation.stop())
    try:
        trace, _ = run(generation)
    finally:
        hook.remove()
    assert trace.stop_reason == "stopped" and trace.output_tokens == 0
    assert [fraction for _, fraction in trace.prefill_progress] == [0.0]


def test_decode_steps_report_nothing(tiny_model):
    """Only the prompt's pass reports: a long reply adds no progress events."""
    ids = prompt_ids(tiny_model, "hi")
    trace, _ = run(LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=12, decode_loop="lean")))
    assert trace.output_tokens > 3
    assert len(trace.prefill_progress) == 3


def test_progress_is_saved_with_the_chat_and_checked_on_load(tiny_model):
    trace, _ = run(LocalReply(tiny_model, prompt_ids(tiny_model, "hi"), GenerationSettings(max_new_tokens=2)))
    restored = trace_from_dict(trace_to_dict(trace), "trace")
    assert restored.prefill_progress == trace.prefill_progress and restored.prefill_progress[-1][1] == 1.0
    assert restored.compute_started_ns == trace.compute_started_ns
    older = {key: value for key, value in trace_to_dict(trace).items() if key != "prefill_progress"}
    assert trace_from_dict(older, "trace").prefill_progress == []
    for bad in ([[1, 1.5]], [[1, 0.5], [2, 0.25]], [["x", 0.5]], [[1]]):
        with pytest.raises(TraceFileError, match="prefill_progress"):
            trace_from_dict({**trace_to_dict(trace), "prefill_progress": bad}, "trace")
