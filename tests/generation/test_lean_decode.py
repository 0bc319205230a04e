"""The lean decode loop gives the same tokens as transformers' generate(), and falls back where it must."""

import threading

import pytest
import torch
from transformers import LogitsProcessor, LogitsProcessorList, SuppressTokensLogitsProcessor

from core.chats.session import ChatSession
from core.generation.decode.choice import lean_decoder, loop_for
from core.generation.decode.decoder import LeanDecoder
from core.generation.decode.loop import lean_decode
from core.generation.local_reply import LocalReply
from core.generation.stopping import PassInterrupted
from core.settings import GenerationSettings


def suppress_eos(eos_ids):
    return SuppressTokensLogitsProcessor(sorted(eos_ids))


def chat_prompt(loaded, text, reply_tokens=64):
    session = ChatSession()
    session.add_user(text)
    return torch.tensor([session.build_prompt(loaded.tokenizer, loaded.context_window, reply_tokens).input_ids])


def generate_reply(model, ids, new_tokens, eos_ids):
    with torch.inference_mode():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new_tokens,
            do_sample=False,
            logits_processor=LogitsProcessorList([suppress_eos(eos_ids)]),
            pad_token_id=sorted(eos_ids)[0],
        )
    return out[0, ids.shape[1] :].tolist()


def lean_reply(model, ids, new_tokens, eos_ids, **kwargs):
    with torch.inference_mode():
        out = lean_decode(
            LeanDecoder(model),
            ids,
            new_tokens,
            eos_token_ids=eos_ids,
            logits_processor=LogitsProcessorList([suppress_eos(eos_ids)]),
            **kwargs,
        )
    return out[0, ids.shape[1] :].tolist()


def test_prompt_pass_matches_the_models_forward(tiny_model):
    ids = chat_prompt(tiny_model, "Tell me about lighthouses.")
    decoder = LeanDecoder(tiny_model.model)
    with torch.inference_mode():
        expected = tiny_model.model(ids).logits[0, -1]
        got = decoder.forward(ids[0], 0)[0]
    assert torch.allclose(got, expected, atol=1e-4, rtol=1e-4)


def test_greedy_reply_is_token_for_token_generates(tiny_model):
    ids = chat_prompt(tiny_model, "Tell me about lighthouses.")
    eos = tiny_model.eos_token_ids
    assert lean_reply(tiny_model.model, ids, 40, eos) == generate_reply(tiny_model.model, ids, 40, eos)


@pytest.mark.model
def test_real_int4_model_replies_exactly_as_generate_does(int4_model):
    eos = int4_model.eos_token_ids
    # A chat prompt, and the bare text fast_decode.py uses (where a rounding difference once showed).
    for ids in (
        chat_prompt(int4_model, "Tell me a long story about a lighthouse keeper."),
        torch.tensor([int4_model.tokenizer("Hello! Please tell me about the sea.")["input_ids"]]),
    ):
        lean = lean_reply(int4_model.model, ids, 64, eos)
        assert lean == generate_reply(int4_model.model, ids, 64, eos)
        assert len(set(lean)) > 10  # a real reply, not one token repeated


def test_a_reply_longer_than_the_reserved_room_grows_the_cache_and_still_matches(tiny_model, monkeypatch):
    import core.generation.decode.loop

    monkeypatch.setattr(core.generation.decode.loop, "INITIAL_REPLY_ROOM", 3)
    ids = chat_prompt(tiny_model, "Tell me about lighthouses.")
    eos = tiny_model.eos_token_ids
    decoder = LeanDecoder(tiny_model.model)
    with torch.inference_mode():
        out = lean_decode(
            decoder, ids, 40, eos_token_ids=eos, logits_processor=LogitsProcessorList([suppress_eos(eos)])
        )
    assert out[0, ids.shape[1] :].tolist() == generate_reply(tiny_model.model, ids, 40, eos)
    assert ids.shape[1] + 3 < decoder.capacity < 2 * (ids.shape[1] + 40)  # grown by doubling, not reserved


def test_a_short_reply_after_a_long_one_gives_the_large_cache_back(tiny_model, monkeypatch):
    import core.generation.decode.loop

    monkeypatch.setattr(core.generation.decode.loop, "INITIAL_REPLY_ROOM", 3)
    ids = chat_prompt(tiny_model, "Tell me about lighthouses.")
    eos = tiny_model.eos_token_ids
    decoder = LeanDecoder(tiny_model.model)
    keep_going = LogitsProcessorList([suppress_eos(eos)])
    with torch.inference_mode():
        lean_decode(decoder, ids, 200, eos_token_ids=eos, logits_processor=keep_going)
        long_capacity = decoder.capacity
        short = lean_decode(decoder, ids, 2, eos_token_ids=eos, logits_processor=keep_going)
    assert long_capacity >= ids.shape[1] + 200 and decoder.capacity == ids.shape[1] + 2
    assert short[0, ids.shape[1] :].tolist() == generate_reply(tiny_model.model, ids, 40, eos)[:2]


def test_a_stop_during_prefill_abandons_the_pass_at_the_next_layer_with_no_reply_token(tiny_model):
    ids = chat_prompt(tiny_model, "Tell me about lighthouses.")
    layers = tiny_model.model.model.layers
    assert len(layers) >= 2

    class PressedDuringTheFirstLayer(threading.Event):
        """Set by the first check after it: as if Stop were pressed while layer 0 was running."""

        checks = 0

        def is_set(self):
            self.checks += 1
            return self.checks > 1

    layers_run = []
    hooks = [
        layer.mlp.down_proj.register_forward_hook(lambda module, args, out, i=i: layers_run.append(i))
        for i, layer in enumerate(layers)
    ]
    streamed = []

    try:
        with torch.inference_mode(), pytest.raises(PassInterrupted):
            # The one way a prefill is abandoned, in both loops: PassInterrupted from the layer check.
            lean_decode(
                LeanDecoder(tiny_model.model),
                ids,
                20,
                eos_token_ids=(),
                on_token=streamed.append,
                stop_event=PressedDuringTheFirstLayer(),
            )
    finally:
        for hook in hooks:
            hook.remove()
    assert layers_run == [0]  # layer 0 finished; layer 1 never ran
    assert streamed == []  # no reply token was handed on
    # An unset event changes nothing: the reply is generate()'s.
    with torch.inference_mode():
        full = lean_decode(
            LeanDecoder(tiny_model.model),
            ids,
            12,
            eos_token_ids=(),
            stop_event=threading.Event(),
            logits_processor=LogitsProcessorList([suppress_eos(tiny_model.eos_token_ids)]),
        )
    assert full[0, ids.shape[1] :].tolist() == generate_reply(tiny_model.model, ids, 12, tiny_model.eos_token_ids)


def test_stops_at_eos_and_on_the_stop_event(tiny_model):
    ids = chat_prompt(tiny_model, "hi")
    first = lean_reply(tiny_model.model, ids, 1, ())[0]
    # Declaring the first reply token an end-of-sequence token ends the reply right there.
    with torch.inference_mode():
        out = lean_decode(LeanDecoder(tiny_model.model), ids, 20, eos_token_ids=[first])
    assert out[0, ids.shape[1] :].tolist() == [first]
    stop = threading.Event()

    class StopAfterThree(LogitsProcessor):
        calls = 0

        def __call__(self, input_ids, scores):
            StopAfterThree.calls += 1
            if StopAfterThree.calls == 3:
                stop.set()
            return scores

    with torch.inference_mode():
        out = lean_decode(
            LeanDecoder(tiny_model.model),
            ids,
            50,
            logits_processor=LogitsProcessorList([StopAfterThree()]),
            stop_event=stop,
        )
    assert out.shape[1] - ids.shape[1] == 3


def test_sampling_follows_the_seed_and_the_temperature(tiny_model):
    ids = chat_prompt(tiny_model, "hi")

    def sample(seed, temperature):
        torch.manual_seed(seed)
        return lean_reply(tiny_model.model, ids, 30, (), temperature=temperature, top_p=0.9)

    assert sample(7, 1.5) == sample(7, 1.5)
    assert sample(7, 1.5) != sample(8, 1.5)
    greedy = lean_reply(tiny_model.model, ids, 30, ())
    assert sample(7, 1e-4) == greedy  # a temperature near 0 is greedy


def test_generation_uses_the_lean_loop_unless_told_or_unable(tiny_model):
    ids = chat_prompt(tiny_model, "hi")[0].tolist()
    texts = {}
    for loop in ("lean", "generate"):
        generation = LocalReply(tiny_model, ids, GenerationSettings(max_new_tokens=12, decode_loop=loop))
        assert generation.decode_loop == loop and generation.decode_loop_note is None
        trace = generation.run_to_end()
        texts[loop] = trace.text
        assert trace.output_tokens == 12 or trace.stop_reason.name == "EOS"
    assert texts["lean"] == texts["generate"]


def test_models_the_loop_does_not_cover_fall_back_to_generate(tiny_model):
    model = tiny_model.model
    assert loop_for(model, "lean") == ("lean", None)
    original = model.generation_config.repetition_penalty
    model.generation_config.repetition_penalty = 1.3
    try:
        loop, why = loop_for(model, "lean")
        assert loop == "generate" and "repetition_penalty" in why
    finally:
        model.generation_config.repetition_penalty = original
    other = torch.nn.Module()
    other.config = type("Config", (), {"model_type": "gpt2"})()
    loop, why = loop_for(other, "lean")
    assert loop == "generate" and "gpt2" in why


def test_one_decoder_per_model_is_reused_and_goes_with_its_model(tiny_model_folder):
    import gc
    import weakref

    from core.model.loader import load_model

    model = load_model(str(tiny_model_folder)).model
    assert lean_decoder(model) is lean_decoder(model)
    model_alive = weakref.ref(model)
    del model
    gc.collect()
    assert model_alive() is None  # the cached decoder does not keep a dropped model (and its weights) alive
