"""The finding of a decode that ran at the memory's speed: only a smaller file reads less, and by how much."""

from __future__ import annotations

from core.diagnosis.quant_sizes import MIXES, step_weight_bytes
from core.diagnosis.words import share
from core.roofline.counts import ArithmeticShape
from core.roofline.placement import past_ceiling
from core.timing.finding import Finding

# At this share of the memory ceiling decode is bound by it: faster kernels would not help, fewer bytes would.
MEMORY_BOUND_SHARE = 0.7
# A smaller file worth naming reads at least this much less a step.
WORTH_NAMING = 1.2


def memory_finding(placement: dict | None, arithmetic: dict | None) -> list[Finding]:
    decode = (placement or {}).get("decode")
    if not decode or decode.get("share_of_ceiling") is None or not arithmetic:
        return []
    reached = decode["share_of_ceiling"]
    if reached < MEMORY_BOUND_SHARE:
        return []
    shape = ArithmeticShape.from_dict(arithmetic)
    step_bytes = decode["bytes"]
    weights = shape.step_weight_bytes()
    faster = {mix: step_bytes / (step_bytes - weights + step_weight_bytes(shape, mix)) for mix in MIXES}
    smaller = sorted(((speedup, mix) for mix, speedup in faster.items() if speedup >= WORTH_NAMING), reverse=True)
    if not smaller:
        return []  # the file is already as small as the usual quantisations: nothing slowed it
    # Q4_K_M is what LM Studio and Ollama download by default: named where it is worth it, else the fastest.
    speedup, mix = next(((value, name) for value, name in smaller if name == "Q4_K_M"), smaller[0])
    memory = "the last-level cache" if decode.get("weights_fit_in_last_level_cache") else "memory"
    low = past_ceiling(placement, "decode")
    return [
        Finding(
            kind="memory_bound",
            summary=(
                f"Decode ran at {share(reached)} of this machine's {memory} bandwidth: only a smaller file is faster; "
                f"{mix} of this model would be about {speedup:.1f}x faster here."
            ),
            cause=f"decode reads every weight once a token, and this file is {weights / 1e9:,.2f} GB of weights",
            evidence=(
                f"{decode['bytes'] / 1e6:,.0f} MB read a token at {decode['bytes_per_s'] / 1e9:,.1f} GB/s, "
                f"{share(reached)} of the {decode['ceiling_bytes_per_s'] / 1e9:,.1f} GB/s measured"
                + (f". {low}" if low else "")
            ),
            figure=reached,
            advice="; ".join(
                f"{name} reads {1 / value:.0%} as much a token" for value, name in sorted(smaller, reverse=True)
            ),
        )
    ]
