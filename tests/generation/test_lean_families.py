"""Each model family the lean loop covers replies token for token as generate() does, at each precision."""

import pytest
import torch
import transformers

from core.generation.decode.choice import loop_for
from core.generation.decode.decoder import LeanDecoder
from core.generation.decode.loop import lean_decode
from core.quant.apply import quantize_int4

VOCAB = 256
PROMPT_LENGTH = 20
# Shorter than the prompt, so a windowed layer's prefill and its decode steps both drop old positions.
WINDOW = 8
NEW_TOKENS = 24

# Small but not degenerate. The int4 kernel needs in_features in 32s and out_features in 16s; q/k/v and
# gate/up of 128, 64, 64 and 128 rows fill whole packing blocks, so they run as one fused product.
COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    max_position_embeddings=256,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)

FAMILY_CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(**COMMON),
    # Llama 3.1/3.2's scaled rotary frequencies, and YaRN's, which also scales cos and sin.
    "llama-rope-llama3": lambda: transformers.LlamaConfig(
        **COMMON,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    ),
    "qwen2-rope-yarn": lambda: transformers.Qwen2Config(
        **COMMON,
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    ),
    "qwen2": lambda: transformers.Qwen2Config(
        **COMMON, use_sliding_window=True, sliding_window=WINDOW, max_window_layers=1
    ),
    "qwen3": lambda: transformers.Qwen3Config(**COMMON),
    "mistral": lambda: transformers.MistralConfig(**COMMON, sliding_window=WINDOW),
    "phi3": lambda: transformers.Phi3Config(**COMMON, sliding_window=WINDOW),
    "gemma2": lambda: transformers.Gemma2Config(
        **COMMON,
        sliding_window=WINDOW,
        query_pre_attn_scalar=24,
        final_logit_softcapping=5.0,
        attn_logit_softcapping=3.0,
    ),
    "gemma3_text": lambda: transformers.Gemma3TextConfig(
        **COMMON,
        sliding_window=WINDOW,
        query_pre_attn_scalar=24,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    ),
}


def tiny_model(family: str, precision: str):
    """A random-weight model of the family; weights drawn wider than the default, so the logits have
    clear winners and a rounding slip would show as a different token rather than hide in a near tie."""
    config = FAMILY_CONFIGS[family]()
    # Gemma multiplies its embeddings by sqrt(hidden): weights that wide saturate it into one repeated token.
    config.initializer_range = 0.03 if family.startswith("gemma") else 0.2
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    if precision == "int4":
        quantize_int4(model)
    elif precision == "bfloat16":
        model = model.to(torch.bfloat16)
    model.generation_config.eos_token_id = None  # replies of exactly NEW_TOKENS in both loops
    return model


def prompt():
    generator = torch.Generator().manual_seed(1)
    return torch.randint(3, VOCAB, (1, PROMPT_LENGTH), generator=generator)


def generate_reply(model, ids):
    with torch.inference_mode():
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0
        )
    return out[0, ids.shape[1] :].tolist()


def lean_reply(model, ids):
    with torch.inference_mode():
        out = lean_decode(LeanDecoder(model), ids, NEW_TOKENS)
    return out[0, ids.shape[1] :].tolist()


@pytest.mark.parametrize("precision", ["float32", "bfloat16", "int4"])
@pytest.mark.parametrize("family", sorted(FAMILY_CONFIGS))
def test_greedy_reply_is_token_for_token_generates(family, precision):
    model = tiny_model(family, precision)
    assert loop_for(model, "lean") == ("lean", None)
    ids = prompt()
    lean = lean_reply(model, ids)
    assert lean == generate_reply(model, ids)
    assert len(set(lean)) > 3  # a real reply, not one token repeated


@pytest.mark.parametrize("family", sorted(FAMILY_CONFIGS))
def test_prompt_pass_matches_the_models_forward(family):
    model = tiny_model(family, "float32")
    ids = prompt()
    with torch.inference_mode():
        expected = model(ids).logits[0, -1]
        got = LeanDecoder(model).forward(ids[0], 0)[0]
    assert torch.allclose(got, expected, atol=1e-4, rtol=1e-4)


def test_int4_projections_give_the_same_numbers_fused_as_apart():
    """torch packs int4 rows in blocks of 32 or 64 by CPU; layers of 16 or 48 rows cannot simply be joined."""
    from core.generation.decode.projection import fused_projection
    from core.quant.groupwise import quantize_q4_groups
    from core.quant.int4_linear import Int4Linear

    torch.manual_seed(0)
    x = torch.randn(3, 64)
    for rows in ((16, 48, 32), (64, 64, 32), (128, 64, 64)):
        layers = [Int4Linear(quantize_q4_groups(torch.randn(n, 64)), torch.randn(n)) for n in rows]
        with torch.inference_mode():
            assert torch.equal(fused_projection(*layers)(x), torch.cat([layer(x) for layer in layers], dim=-1))


def test_models_the_loop_does_not_cover_run_on_generate_and_say_why():
    gpt2 = transformers.AutoModelForCausalLM.from_config(
        transformers.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4)
    )
    loop, why = loop_for(gpt2, "lean")
    assert loop == "generate" and "'gpt2'" in why and "qwen3" in why  # names the model and what is covered
    partial_rotary = transformers.AutoModelForCausalLM.from_config(
        transformers.Phi3Config(
            **COMMON, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
        )
    )
    loop, why = loop_for(partial_rotary, "lean")
    assert loop == "generate" and "partial rotary" in why
    growing_rope = transformers.AutoModelForCausalLM.from_config(
        transformers.Qwen2Config(
            **COMMON, rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
        )
    )
    loop, why = loop_for(growing_rope, "lean")
    assert loop == "generate" and "'dynamic'" in why


@pytest.mark.parametrize("family", ["qwen2", "phi3", "gemma3_text"])
def test_a_saved_model_of_the_family_loads_as_int4_and_replies_on_the_lean_loop(family, tmp_path, embedded_tokenizer):
    """What a user does: open a model folder at int4 and chat; the lean loop's text is generate()'s."""
    from core.chats.session import ChatSession
    from core.generation.local_reply import LocalReply
    from core.model.loader import load_model
    from core.settings import GenerationSettings

    tokenizer = embedded_tokenizer
    config = FAMILY_CONFIGS[family]()
    config.vocab_size = len(tokenizer)
    config.bos_token_id, config.eos_token_id, config.pad_token_id = (
        tokenizer.bos_token_id,
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path, safe_serialization=True)
    tokenizer.save_pretrained(tmp_path)
    loaded = load_model(str(tmp_path), dtype="int4")
    session = ChatSession()
    session.add_user("Tell me about lighthouses.")
    ids = session.build_prompt(loaded.tokenizer, loaded.context_window, 16).input_ids
    texts = {}
    for loop in ("lean", "generate"):
        generation = LocalReply(loaded, ids, GenerationSettings(max_new_tokens=16, decode_loop=loop))
        assert generation.decode_loop == loop and generation.decode_loop_note is None
        texts[loop] = generation.run_to_end().text
    assert texts["lean"] == texts["generate"] and texts["lean"]
