"""Generation on a worker thread: per-token stamps, stop reasons, stop within one step, errors as events."""

import threading

import pytest
from transformers import LogitsProcessor

from core.chats.session import ChatSession
from core.generation.local_reply import LocalReply
from core.settings import GenerationSettings
from core.timing.events import FinishedEvent, StopReason, TokenEvent


def prompt_ids(loaded, text):
    session = ChatSession()
    session.add_user(text)
    return session.build_prompt(loaded.tokenizer, loaded.context_window, 64).input_ids


def run(generation, on_token=None):
    """Consume the reply; the LocalReply records its own trace as the events pass."""
    generation.start()
    events = []
    for event in generation:
        events.append(event)
        if on_token and isinstance(event, TokenEvent):
            on_token(event, generation)
    assert generation.join(timeout=30)
    trace = generation.trace
    assert trace.output_tokens == sum(isinstance(e, TokenEvent) for e in events) and trace.finished
    return trace, events


@pytest.mark.model
def test_real_model_answers_with_stamped_tokens_and_eos(embedded_model):
    ids = prompt_ids(embedded_model, "What is the capital of France? Answer in one sentence.")
    trace, events = run(LocalReply(embedded_model, ids, GenerationSettings(max_new_tokens=40)))
    assert "Paris" in trace.text
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert [e.index for e in tokens] == list(range(len(tokens)))
    stamps = [e.timestamp_ns for e in tokens]
    assert all(a < b for a, b in zip(stamps, stamps[1:]))
    assert stamps[0] > trace.request_start_ns
    assert isinstance(events[-1], FinishedEvent) and sum(isinstance(e, FinishedEvent) for e in events) == 1
    assert trace.stop_reason == "eos" and trace.token_ids[-1] in embedded_model.eos_token_ids
    metrics = trace.metrics()
    assert metrics.ttft_s == pytest.approx(trace.token_times_s()[0])
    assert metrics.tpot_s == pytest.approx((metrics.e2e_s - metrics.ttft_s) / (len(stamps) - 1))


@pytest.mark.model
def test_greedy_generation_matches_plain_generate(embedded_model):
    import torch

    ids = prompt_ids(embedded_model, "Name three colours.")
    trace, _ = run(LocalReply(embedded_model, ids, GenerationSettings(max_new_tokens=12)))
    with torch.inference_mode():
        reference = embedded_model.model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)
    assert trace.token_ids == reference[0, len(ids) :].tolist()
    assert trace.stop_reason in ("max_tokens", "eos")


@pytest.mark.model
def test_stop_at_the_fifth_token_ends_within_one_step(embedded_model):
    ids = prompt_ids(embedded_model, "Write a long story about a dragon.")

    def stop_at_fifth(event, generation):
        if event.index == 4:
            generation.stop()

    trace, _ = run(LocalReply(embedded_model, ids, GenerationSettings(max_new_tokens=500)), stop_at_fifth)
    assert 5 <= trace.output_tokens <= 6
    assert trace.stop_reason == "stopped"


def test_max_tokens_stop_reason(tiny_model):
    ids = prompt_ids(tiny_model, "hi")
    trace, _ = run(LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=7)))
    assert trace.output_tokens == 7 and trace.stop_reason == "max_tokens"


def test_seeded_sampling_is_reproducible(tiny_model):
    ids = prompt_ids(tiny_model, "hi")
    settings = GenerationSettings(max_new_tokens=10, temperature=1.5, top_p=0.9, seed=1234)
    first, _ = run(LocalReply(tiny_model, ids, settings))
    second, _ = run(LocalReply(tiny_model, ids, settings))
    assert first.token_ids == second.token_ids


class ExplodeAfter(LogitsProcessor):
    def __init__(self, tokens):
        self.calls = 0
        self.tokens = tokens

    def __call__(self, input_ids, scores):
        self.calls += 1
        if self.calls > self.tokens:
            raise RuntimeError("injected failure inside generation")
        return scores


def test_exception_inside_generation_arrives_as_an_error_event(tiny_model):
    ids = prompt_ids(tiny_model, "hi")
    generation = LocalReply(
        tiny_model, ids, GenerationSettings(max_new_tokens=50), timeout_s=20, logits_processors=[ExplodeAfter(3)]
    )
    trace, events = run(generation)
    assert trace.stop_reason == StopReason.ERROR.value
    assert "injected failure inside generation" in trace.error
    assert trace.output_tokens == 3


def test_stop_before_start_generates_nothing(tiny_model):
    generation = LocalReply(tiny_model, prompt_ids(tiny_model, "hi"), GenerationSettings(max_new_tokens=5))
    generation.stop()
    trace, _ = run(generation)
    assert trace.output_tokens == 0 and trace.stop_reason == "stopped"
    assert trace.metrics().ttft_s is None


def test_a_silent_generating_thread_times_out_instead_of_hanging(tiny_model, monkeypatch):
    release = threading.Event()
    generation = LocalReply(
        tiny_model, prompt_ids(tiny_model, "hi"), GenerationSettings(max_new_tokens=5), timeout_s=0.5
    )
    monkeypatch.setattr(generation, "_generate", lambda: release.wait(10))
    trace, _ = run_without_join(generation)
    release.set()
    assert trace.stop_reason == "error" and "within 0.5 s" in trace.error
    assert generation.join(timeout=10)


def run_without_join(generation):
    generation.start()
    events = list(generation)
    return generation.trace, events


def test_generations_can_share_one_long_lived_thread(tiny_model):
    from core.compute_thread import ComputeThread

    thread = ComputeThread()
    try:
        ids = prompt_ids(tiny_model, "hi")
        first, _ = run(LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=4), thread=thread))
        second, _ = run(LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=4), thread=thread))
        assert first.token_ids == second.token_ids and first.output_tokens == 4
        assert thread.call(lambda: threading.current_thread().name) == "latencylab-compute"
    finally:
        assert thread.close(timeout=10)
    assert not thread.alive


@pytest.mark.parametrize("loop", ["lean", "generate"])
def test_a_stop_during_prefill_lands_at_the_next_layer_with_no_token(tiny_model, loop):
    ids = prompt_ids(tiny_model, "Tell me about lighthouses.")
    generation = LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=20, decode_loop=loop))
    layers = tiny_model.model.model.layers
    layers_run = []

    def press_stop_during_layer_0(module, args, output):
        layers_run.append(0)
        generation.stop()  # as if the user pressed Stop while the prompt's first layer was running

    hooks = [
        layers[0].mlp.down_proj.register_forward_hook(press_stop_during_layer_0),
        layers[1].mlp.down_proj.register_forward_hook(lambda module, args, output: layers_run.append(1)),
    ]
    try:
        trace, events = run(generation)
    finally:
        for hook in hooks:
            hook.remove()
    assert generation.decode_loop == loop
    assert layers_run == [0]  # the pass was abandoned before layer 1
    assert trace.output_tokens == 0 and trace.stop_reason == "stopped" and trace.error is None
    assert isinstance(events[-1], FinishedEvent)
    # The hooks that check for a stop are gone: the next reply on this model runs in full.
    trace, _ = run(LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=3, decode_loop=loop)))
    assert trace.output_tokens >= 1 and trace.error is None
    assert not any(layer._forward_pre_hooks or layer._forward_hooks for layer in layers)


def test_a_stop_set_on_the_requests_event_before_start_is_kept(tiny_model):
    """The stop belongs to the reply from the moment it is requested: a Stop pressed right after Send,
    before the reply was even built, still ends it with no token."""
    stop = threading.Event()
    stop.set()
    generation = LocalReply(tiny_model, prompt_ids(tiny_model, "hi"), GenerationSettings(max_new_tokens=5), stop=stop)
    trace, _ = run(generation)
    assert trace.output_tokens == 0 and trace.stop_reason == "stopped"
