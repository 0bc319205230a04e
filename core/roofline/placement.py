"""Where a reply's two phases land against this machine's ceilings: prefill FLOP/s against the compute ceiling of
the precision its products ran in, decode bytes/s against the memory its weights are read from."""

from __future__ import annotations

from core.roofline.ceilings import Ceilings, format_rate
from core.roofline.counts import ArithmeticShape, prefill_counts, reply_decode_counts

NO_CEILINGS = (
    "no ceilings measured on this CPU yet: the Lab's bandwidth sweep (or `latencylab bench --sweeps "
    "bandwidth`) measures and caches them"
)
# A rate this far past a ceiling means the ceiling was measured low (best-of-passes noise stays well inside it).
PAST_CEILING = 1.05


def past_ceiling(placement: dict | None, phase: str) -> str | None:
    """Where a phase ran faster than the ceiling that bounds it, the ceiling is what is wrong: said, with the day it
    was measured and how to measure it again; None where the share is within the ceiling or unknown."""
    figures = (placement or {}).get(phase) or {}
    reached = figures.get("share_of_ceiling")
    if reached is None or reached < PAST_CEILING:
        return None
    measured_at = ((placement or {}).get("ceilings") or {}).get("measured_at", "")
    day = f" on {measured_at[:10]}" if measured_at[:4].isdigit() else ""
    return (
        f"That is past the ceiling measured{day}, so that measurement was low (the machine was slower or busier "
        f"then): the Lab's bandwidth sweep (or `latencylab bench --sweeps bandwidth`) measures it again."
    )


def compute_ceiling(ceilings: Ceilings | None, precision: str | None):
    """The GEMM ceiling of the precision a prompt's products ran in; without one, the fastest GEMM measured."""
    if ceilings is None:
        return None
    if precision and ceilings.get(f"gemm_{precision}"):
        return ceilings.get(f"gemm_{precision}")
    compute = [ceiling for ceiling in ceilings.ceilings.values() if ceiling.is_compute]
    return max(compute, key=lambda ceiling: ceiling.value) if compute else None


def weights_fit_in_cache(shape: ArithmeticShape, ceilings: Ceilings | None) -> bool:
    llc = ceilings.last_level_cache_bytes if ceilings else None
    return bool(llc and shape.step_weight_bytes() <= llc)


def memory_ceiling(shape: ArithmeticShape, ceilings: Ceilings | None):
    """The last-level cache's bandwidth where the weights fit in it (decode then reads the cache), else DRAM's."""
    if ceilings is None:
        return None
    if weights_fit_in_cache(shape, ceilings) and ceilings.get("llc"):
        return ceilings.get("llc")
    return ceilings.get("dram")


def place_reply(
    arithmetic: dict | None,
    ceilings: Ceilings | dict | None,
    prompt_tokens: int,
    output_tokens: int,
    prefill_s: float | None,
    tpot_s: float | None,
    prompt_start: int = 0,
) -> dict | None:
    """The reply's prefill and decode as achieved rates, each with its share of the ceiling that bounds it.

    prefill_s: the prompt's pass (the waterfall's prefill segment, else the TTFT); prompt_start: positions that
    were already cached, which the pass did not compute. None when the model's shape is unknown (a server).
    """
    if not arithmetic:
        return None
    shape = ArithmeticShape.from_dict(arithmetic)
    if isinstance(ceilings, dict):
        ceilings = Ceilings.from_dict(ceilings)
    document: dict = {"ceilings": ceilings.to_dict() if ceilings else None, "note": None if ceilings else NO_CEILINGS}
    computed = max(prompt_tokens - prompt_start, 0)
    if computed and prefill_s:
        counts = prefill_counts(shape, computed, prompt_start)
        ceiling = compute_ceiling(ceilings, shape.prefill_precision)
        achieved = counts.flops / prefill_s
        document["prefill"] = {
            **counts.to_dict(),
            "tokens": computed,
            "seconds": prefill_s,
            "flops_per_s": achieved,
            "ceiling": ceiling.name if ceiling else None,
            "ceiling_flops_per_s": ceiling.value if ceiling else None,
            "share_of_ceiling": achieved / ceiling.value if ceiling else None,
        }
    if output_tokens >= 2 and tpot_s:
        counts = reply_decode_counts(shape, prompt_tokens, output_tokens)
        bytes_per_s = counts.bytes / tpot_s
        ceiling = memory_ceiling(shape, ceilings)
        dram, llc = (ceilings.get("dram"), ceilings.get("llc")) if ceilings else (None, None)
        document["decode"] = {
            **counts.to_dict(),
            "seconds_per_token": tpot_s,
            "bytes_per_s": bytes_per_s,
            "flops_per_s": counts.flops / tpot_s,
            "weights_fit_in_last_level_cache": weights_fit_in_cache(shape, ceilings),
            "ceiling": ceiling.name if ceiling else None,
            "ceiling_bytes_per_s": ceiling.value if ceiling else None,
            "share_of_ceiling": bytes_per_s / ceiling.value if ceiling else None,
            "share_of_dram": bytes_per_s / dram.value if dram else None,
            "share_of_last_level_cache": bytes_per_s / llc.value if llc else None,
        }
    return document


def prefill_sentence(placement: dict | None) -> str | None:
    """For the TTFT card's tooltip."""
    prefill = (placement or {}).get("prefill")
    if not prefill:
        return None
    text = (
        f"This reply's prefill: {prefill['flops'] / 1e9:,.1f} GFLOP for {prefill['tokens']:,} tokens in "
        f"{prefill['seconds'] * 1000:,.0f} ms = {format_rate(prefill['flops_per_s'], 'flop/s')}"
    )
    if prefill["share_of_ceiling"] is None:
        return text + f"; {NO_CEILINGS}."
    label = prefill["ceiling"].removeprefix("gemm_")
    text += (
        f", {prefill['share_of_ceiling']:.0%} of this machine's {label} GEMM ceiling "
        f"({format_rate(prefill['ceiling_flops_per_s'], 'flop/s')})."
    )
    low = past_ceiling(placement, "prefill")
    return f"{text} {low}" if low else text


def decode_sentence(placement: dict | None) -> str | None:
    """For the TPOT card's tooltip."""
    decode = (placement or {}).get("decode")
    if not decode:
        return None
    text = (
        f"This reply's decode reads {decode['bytes'] / 1e6:,.0f} MB a token (weights and KV cache) = "
        f"{format_rate(decode['bytes_per_s'], 'byte/s')}"
    )
    if decode["share_of_ceiling"] is None:
        return text + f"; {NO_CEILINGS}."
    parts = []
    if decode["share_of_dram"] is not None:
        parts.append(f"{decode['share_of_dram']:.0%} of DRAM's read bandwidth")
    if decode["share_of_last_level_cache"] is not None:
        parts.append(f"{decode['share_of_last_level_cache']:.0%} of the last-level cache's")
    where = (
        " The weights fit in the last-level cache, so decode reads the cache, not DRAM."
        if decode["weights_fit_in_last_level_cache"]
        else ""
    )
    low = past_ceiling(placement, "decode")
    return text + ", " + " and ".join(parts) + "." + where + (f" {low}" if low else "")


def reply_placement(trace, arithmetic: dict | None, ceilings: Ceilings | dict | None) -> dict | None:
    """place_reply for a finished reply's trace: its prompt's pass timed by the waterfall's prefill segment
    (from the compute thread taking the job to token 0), or by the TTFT where that was not stamped."""
    from core.timing.waterfall import segments

    if not arithmetic or not trace.output_tokens:
        return None
    metrics = trace.metrics()
    prefill = next((segment.duration_s for segment in segments(trace) if segment.name == "prefill"), None)
    return place_reply(
        arithmetic, ceilings, trace.prompt_tokens, trace.output_tokens, prefill or metrics.ttft_s, metrics.tpot_s
    )
