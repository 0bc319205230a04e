"""Decode TPOT of the lean loop against generate() for each model family it covers, on random models.

The models are random-weight, built from a config of each family with the same sizes, so the figures
compare the loops (and the families' extra work: biases, head norms, soft-capping, windows), not
checkpoints. Runs are interleaved, so machine noise hits every family alike.
Run: .venv/bin/python benchmarks/family_decode.py [--rounds 3] [--tokens 32] [--dtypes float32,int4]
"""

from __future__ import annotations

import argparse

import _common  # (sets offline mode)
from _common import bare_reply, bare_tpot, median

# A few million weights a layer: small enough to build in seconds, large enough that the products,
# not Python, are most of a generate() step.
SIZES = dict(
    vocab_size=8192,
    hidden_size=512,
    intermediate_size=1536,
    num_hidden_layers=8,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=64,
    max_position_embeddings=2048,
    bos_token_id=1,
    eos_token_id=None,
    pad_token_id=0,
)
# Shorter than prompt plus reply, so the windowed families attend over a cut window while decoding.
WINDOW = 32


def family_configs() -> dict:
    import transformers

    return {
        "llama": transformers.LlamaConfig(**SIZES),
        "qwen2": transformers.Qwen2Config(**SIZES),
        "qwen3": transformers.Qwen3Config(**SIZES),
        "mistral": transformers.MistralConfig(**SIZES, sliding_window=WINDOW),
        "phi3": transformers.Phi3Config(**SIZES),
        "gemma2": transformers.Gemma2Config(**SIZES, sliding_window=WINDOW, query_pre_attn_scalar=64),
        "gemma3_text": transformers.Gemma3TextConfig(**SIZES, sliding_window=WINDOW, query_pre_attn_scalar=64),
    }


def build(config, dtype: str):
    import torch
    import transformers

    from core.quant.apply import quantize_int4

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    if dtype == "int4":
        quantize_int4(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--dtypes", default="float32,int4")
    parser.add_argument("--families", default=",".join(family_configs()))
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "family_decode")
    import torch

    from core.generation.decode.choice import lean_loop_refusal

    configs = family_configs()
    families = args.families.split(",")
    models = {(family, dtype): build(configs[family], dtype) for family in families for dtype in args.dtypes.split(",")}
    prompt = torch.randint(3, SIZES["vocab_size"], (1, 24), generator=torch.Generator().manual_seed(1))
    loops = ("generate", "lean")
    tpots = {(key, loop): [] for key in models for loop in loops}
    for key, model in models.items():
        refusal = lean_loop_refusal(model)
        if refusal:
            raise SystemExit(f"{key}: the lean loop refuses it: {refusal}")
        for loop in loops:
            bare_tpot(model, prompt, 4, loop)  # warm-up
    for _ in range(args.rounds):
        for key, model in models.items():
            for loop in loops:
                tpots[key, loop].append(bare_tpot(model, prompt, args.tokens, loop))
    print(
        f"random models: hidden {SIZES['hidden_size']}, {SIZES['num_hidden_layers']} layers, vocab "
        f"{SIZES['vocab_size']}; prompt {prompt.shape[1]} tokens; {args.rounds} interleaved rounds of "
        f"{args.tokens} new tokens; windowed families use a {WINDOW}-token window\n"
    )
    print(f"{'family':<13}{'dtype':<9}{'generate ms':>12}{'lean ms':>9}{'speedup':>9}{'same tokens':>13}")
    for (family, dtype), model in models.items():
        generate_ms = median(tpots[(family, dtype), "generate"]) * 1000
        lean_ms = median(tpots[(family, dtype), "lean"]) * 1000
        with torch.inference_mode():
            replies = [bare_reply(model, prompt, args.tokens, loop)[0, prompt.shape[1] :].tolist() for loop in loops]
        same = sum(a == b for a, b in zip(*replies))
        print(
            f"{family:<13}{dtype:<9}{generate_ms:>12.2f}{lean_ms:>9.2f}{generate_ms / lean_ms:>8.2f}x"
            f"{same:>9}/{args.tokens}"
        )
        report.figure(f"{family}_{dtype}_lean_tpot_ms", lean_ms)
        report.figure(f"{family}_{dtype}_generate_tpot_ms", generate_ms)


if __name__ == "__main__":
    main()
