"""The roofline's verdict: is prefill bound by arithmetic and decode by memory on this machine, and if not, why;
and why batching is (or is not) nearly free here, with what it would take."""

from __future__ import annotations

import math

from core.lab.verdict_record import pct
from core.lab.verdict_record import verdict as _verdict
from core.roofline.ceilings import Ceilings, format_rate
from core.roofline.counts import ArithmeticShape
from core.roofline.placement import compute_ceiling, memory_ceiling, weights_fit_in_cache

CLAIM_ROOFLINE = "Prefill is limited by arithmetic, decode by memory bandwidth"
# "Limited by memory": a decode step reads at least this share of what the memory it reads from delivers.
MEMORY_BOUND_SHARE = 0.6
# "Limited by arithmetic": the prompt's pass is right of the ridge (more FLOPs per byte than the machine's
# compute ceiling over its memory ceiling) and reaches at least this share of the compute ceiling.
COMPUTE_BOUND_SHARE = 0.25
# The batch size the chapter's "nearly free" is checked at in the what-it-would-take sentence.
TARGET_BATCH = 8


def judge_roofline(results) -> dict:
    criterion = (
        f"the longest prompt's pass lies right of the ridge and reaches at least "
        f"{COMPUTE_BOUND_SHARE:.0%} of the GEMM ceiling, and a decode step reads at least "
        f"{MEMORY_BOUND_SHARE:.0%} of the bandwidth of the memory its weights come from"
    )
    ceilings = Ceilings.from_dict(results.ceilings) if results.ceilings else None
    arithmetic = (results.model or {}).get("arithmetic")
    rows = sorted(
        (r for r in results.prompt if r.get("prefill_flops_per_s") and r.get("decode_bytes_per_s")),
        key=lambda r: r["prompt_tokens"],
    )
    if ceilings is None or not arithmetic or not rows:
        return _verdict(
            "roofline",
            CLAIM_ROOFLINE,
            None,
            "needs the bandwidth sweep (this machine's ceilings) and the prompt sweep",
            criterion,
        )
    shape = ArithmeticShape.from_dict(arithmetic)
    compute, memory = compute_ceiling(ceilings, shape.prefill_precision), memory_ceiling(shape, ceilings)
    if compute is None or memory is None:
        return _verdict("roofline", CLAIM_ROOFLINE, None, "the ceilings lack a GEMM or a bandwidth figure", criterion)
    longest, shortest = rows[-1], rows[0]
    ridge = compute.value / memory.value
    prefill_share = longest["prefill_flops_per_s"] / compute.value
    prefill_bound = longest["prefill_intensity"] > ridge and prefill_share >= COMPUTE_BOUND_SHARE
    evidence = (
        f"prefill of {longest['prompt_tokens']:,} tokens ran at "
        f"{format_rate(longest['prefill_flops_per_s'], 'flop/s')}, {pct(prefill_share)} of the "
        f"{compute.label} ceiling ({format_rate(compute.value, 'flop/s')}), at "
        f"{longest['prefill_intensity']:,.0f} FLOPs per byte against a ridge at {ridge:,.0f}"
    )
    evidence += (
        ""
        if prefill_bound
        else " — short of what the arithmetic allows"
        if longest["prefill_intensity"] > ridge
        else " — left of the ridge, so memory, not arithmetic, bounds it"
    )
    evidence += "; " + decode_explanation(shape, ceilings, shortest["decode_bytes_per_s"], shortest.get("tpot_s"))
    if ceilings.loaded:
        evidence += (
            f" (the ceilings were measured while other programs used {ceilings.others_share:.0%} of the "
            f"cores: they are below what this machine can do, and so are these shares' denominators)"
        )
    decode_share = shortest["decode_bytes_per_s"] / memory.value
    holds = prefill_bound and decode_share >= MEMORY_BOUND_SHARE
    return _verdict("roofline", CLAIM_ROOFLINE, holds, evidence, criterion)


def decode_explanation(shape: ArithmeticShape, ceilings: Ceilings, bytes_per_s: float, tpot_s: float | None) -> str:
    """Decode's bytes/s against DRAM (and the cache, where the weights fit in it), and what bounds it."""
    memory = memory_ceiling(shape, ceilings)
    dram = ceilings.get("dram")
    share = bytes_per_s / memory.value
    text = f"decode read {format_rate(bytes_per_s, 'byte/s')}"
    if tpot_s:
        text += f" at {1 / tpot_s:,.0f} tok/s"
    if dram is not None:
        text += f": {share if memory is dram else bytes_per_s / dram.value:.0%} of DRAM ({format_rate(dram.value, 'byte/s')})"
    if weights_fit_in_cache(shape, ceilings) and memory is not dram:
        text += (
            f" and {share:.0%} of the last-level cache ({format_rate(memory.value, 'byte/s')}), which holds "
            f"the {shape.step_weight_bytes() / 1e6:,.0f} MB of weights"
        )
    if share >= MEMORY_BOUND_SHARE:
        return text + ", so decode is bound by memory, as the chapter says"
    return (
        text + f", so on {ceilings.threads} threads decode is bound by the cores' block arithmetic "
        f"(unpacking and multiplying each quant block), not by memory"
    )


def batch_explanation(results, single: dict, largest: dict) -> str | None:
    """Why the batch sweep came out as it did, from the ceilings and the step times; None without ceilings."""
    ceilings = Ceilings.from_dict(results.ceilings) if results.ceilings else None
    arithmetic = (results.model or {}).get("arithmetic")
    if ceilings is None or not arithmetic or largest["batch_size"] <= 1:
        return None
    shape = ArithmeticShape.from_dict(arithmetic)
    memory, dram = memory_ceiling(shape, ceilings), ceilings.get("dram")
    if memory is None:
        return None
    read_s = shape.step_weight_bytes() / memory.value  # reading the weights once at the ceiling
    per_sequence_s = max((largest["step_time_s"] - single["step_time_s"]) / (largest["batch_size"] - 1), 1e-9)
    free_batch = read_s / per_sequence_s
    where = "the last-level cache" if memory is not dram else "DRAM"
    text = (
        f"each extra sequence added {per_sequence_s * 1000:.1f} ms of arithmetic to a step, while reading the "
        f"{shape.step_weight_bytes() / 1e6:,.0f} MB of weights from {where} takes {read_s * 1000:.1f} ms at its "
        f"ceiling: a batch is nearly free only while its arithmetic hides under that read, "
    )
    if free_batch < 2:
        text += "which here it never does"
    else:
        text += f"here up to about batch {math.floor(free_batch)}"
    if dram is not None:
        dram_read_s = shape.step_weight_bytes() / dram.value
        cores_needed = math.ceil(ceilings.threads * TARGET_BATCH * per_sequence_s / dram_read_s)
        text += (
            f". A model's arithmetic per sequence and its weights' read both grow with its size, so size alone "
            f"does not change this balance, except that weights too big for the "
            f"{(ceilings.last_level_cache_bytes or 0) / 2**20:,.0f} MiB cache are read from DRAM at "
            f"{format_rate(dram.value, 'byte/s')}; batching up to {TARGET_BATCH} would be nearly free with "
            f"about {cores_needed} cores sharing this DRAM (here {ceilings.threads})"
        )
    return text
