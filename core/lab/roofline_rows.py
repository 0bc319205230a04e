"""Each lab row's FLOPs and bytes and the rates it reached, from the model's shape: the roofline plot's points."""

from __future__ import annotations

from core.roofline.counts import ArithmeticShape, decode_counts, prefill_counts, reply_decode_counts

ROOFLINE_DEFINITIONS = {
    "prefill_flops": "FLOPs of the prompt's pass: 2 x the products' weights x prompt tokens, the head for the last "
    "position, and attention's two products over the positions each row sees "
    "(core/roofline/counts.py).",
    "prefill_intensity": "prefill_flops / the bytes the pass must move at least (every weight once, the KV cache "
    "written and read once): arithmetic intensity in FLOPs per byte.",
    "prefill_flops_per_s": "prefill_flops / TTFT.",
    "decode_bytes": "Bytes one decode step reads at least: every weight once (an untied embedding only for its "
    "token's row) and the keys and values of every position attended to, averaged over the steps.",
    "decode_intensity": "A decode step's FLOPs / decode_bytes.",
    "decode_bytes_per_s": "decode_bytes / TPOT (batch: / the step time, with every sequence's cache).",
    "decode_flops_per_s": "A decode step's FLOPs / TPOT (batch: all sequences' FLOPs / the step time).",
}


def _shape(arithmetic: dict | None) -> ArithmeticShape | None:
    return ArithmeticShape.from_dict(arithmetic) if arithmetic else None


def prefill_fields(shape: ArithmeticShape, prompt_tokens: int, ttft_s: float | None) -> dict:
    counts = prefill_counts(shape, prompt_tokens)
    return {
        "prefill_flops": counts.flops,
        "prefill_bytes": counts.bytes,
        "prefill_intensity": counts.intensity,
        "prefill_flops_per_s": counts.flops / ttft_s if ttft_s else None,
    }


def decode_fields(flops: float, moved: float, seconds: float | None) -> dict:
    return {
        "decode_flops": flops,
        "decode_bytes": moved,
        "decode_intensity": flops / moved if moved else None,
        "decode_flops_per_s": flops / seconds if seconds else None,
        "decode_bytes_per_s": moved / seconds if seconds else None,
    }


def prompt_row_fields(row: dict, arithmetic: dict | None) -> dict:
    shape = _shape(arithmetic)
    if shape is None or row.get("error") or not row.get("prompt_tokens"):
        return {}
    decode = reply_decode_counts(shape, row["prompt_tokens"], row["new_tokens"])
    return {
        **prefill_fields(shape, row["prompt_tokens"], row.get("ttft_s")),
        **decode_fields(decode.flops, decode.bytes, row.get("tpot_s")),
    }


def batch_row_fields(row: dict, arithmetic: dict | None) -> dict:
    """One step of the whole batch, each sequence halfway through its reply."""
    shape = _shape(arithmetic)
    if shape is None or row.get("error") or not row.get("step_time_s"):
        return {}
    step = decode_counts(shape, row["prompt_tokens"] + row["new_tokens"] // 2, row["batch_size"])
    return decode_fields(step.flops, step.bytes, row["step_time_s"])


def precision_row_fields(row: dict) -> dict:
    """A precision row carries its own model's shape (each precision is its own load)."""
    return prompt_row_fields(row, row.get("arithmetic"))
