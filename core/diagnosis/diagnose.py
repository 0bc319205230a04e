"""A reply's diagnosis: every finding its measurements support, ranked by the time each took from it, or one
finding saying nothing slowed it."""

from __future__ import annotations

from core.diagnosis.machine import (
    contention_finding,
    packing_finding,
    page_fault_finding,
    queue_finding,
    stall_finding,
    window_finding,
)
from core.diagnosis.memory import memory_finding
from core.diagnosis.prompt import prompt_findings
from core.diagnosis.server import server_finding
from core.diagnosis.sharing import sharing_finding
from core.diagnosis.speculation import speculation_finding
from core.diagnosis.words import duration, share
from core.model.facts import ModelFacts
from core.roofline.ceilings import Ceilings
from core.roofline.placement import reply_placement
from core.timing.finding import Finding
from core.timing.trace import ReplyTrace
from core.timing.waterfall import segments

HEALTHY = "healthy"
# At this share of its ceiling a phase ran as fast as the machine allows it to.
NEAR_CEILING = 0.6


def diagnose(
    trace: ReplyTrace, arithmetic: dict | None = None, ceilings: Ceilings | dict | None = None
) -> list[Finding]:
    """The findings, most costly first; [] for a reply that made no token (there is no latency to explain).

    arithmetic and ceilings: the model's shape and this machine's measured ceilings, where known (the roofline's);
    without them no finding about the memory's speed is made.
    """
    if not trace.timestamps_ns:
        return []
    prefill_s = prompt_pass_s(trace)
    placement = reply_placement(trace, arithmetic, ceilings) if trace.server is None else None
    findings = [
        *prompt_findings(trace, prefill_s),
        *queue_finding(trace),
        *contention_finding(trace),
        *page_fault_finding(trace, arithmetic),
        *stall_finding(trace),
        *packing_finding(trace),
        *server_finding(trace),
        *sharing_finding(trace),
        *speculation_finding(trace),
        *window_finding(trace),
        *memory_finding(placement, arithmetic),
    ]
    if not findings:
        return [healthy(trace, placement)]
    return sorted(findings, key=lambda finding: -(finding.cost_s or 0.0))


def prompt_pass_s(trace: ReplyTrace) -> float | None:
    """How long the prompt's pass took: a server's own account of it (its TTFT also holds its queue and the
    network, which its own finding splits off), None where it gives none; locally the waterfall's prefill segment,
    else the TTFT."""
    if trace.server is not None:
        prompt_ms = (trace.server.timings or {}).get("prompt_ms")
        if isinstance(prompt_ms, int | float) and not isinstance(prompt_ms, bool) and 0 < prompt_ms < 1e12:
            return prompt_ms / 1e3
        return None
    prefill_s = next((part.duration_s for part in segments(trace) if part.name == "prefill"), None)
    return prefill_s or trace.metrics().ttft_s


def healthy(trace: ReplyTrace, placement: dict | None) -> Finding:
    """Nothing slowed the reply: said with what was measured (the ceilings' shares, where there are ceilings)."""
    metrics = trace.metrics()
    shares = [
        (phase, (placement or {}).get(phase, {}).get("share_of_ceiling"))
        for phase in ("prefill", "decode")
        if (placement or {}).get(phase)
    ]
    measured = [(phase, value) for phase, value in shares if value is not None]
    if measured:
        said = " and ".join(phase for phase, _ in measured)
        figures = " and ".join(share(value) for _, value in measured)
        # Well below the ceilings nothing outside was found either, but the model's own work on this CPU (a small
        # model's per-step overhead, a prompt too short to fill the GEMM) kept it there: not "nothing".
        near = all(value >= NEAR_CEILING for _, value in measured)
        lead = "Nothing slowed this reply" if near else "Nothing outside the model slowed this reply"
        summary = f"{lead}: {said} ran at {figures} of this machine's ceilings."
        figure = measured[-1][1]
    else:
        parts = [f"TTFT {duration(metrics.ttft_s)}"] if metrics.ttft_s is not None else []
        if metrics.tpot_s is not None:
            parts.append(f"TPOT {duration(metrics.tpot_s)}")
        summary = "Nothing slowed this reply" + (f" ({', '.join(parts)})" if parts else "") + "."
        figure = metrics.tpot_s or metrics.ttft_s or 0.0
    checked = (
        ["the prompt cache", "the wait for the engine", "other programs' load", "page faults", "stalls", "packing"]
        if trace.cpu
        else ["the server's timings"] + (["requests sharing the server"] if trace.sharing else [])
    )
    return Finding(
        kind=HEALTHY,
        summary=summary,
        cause="nothing found",
        evidence="checked: " + ", ".join(checked),
        figure=float(figure),
    )


def diagnose_reply(trace: ReplyTrace, facts: ModelFacts) -> list[Finding]:
    """diagnose() with what the model states: its shape, and this CPU's ceilings (those the engine added, else the
    roofline's cache); a server's reply has neither."""
    if facts.remote:
        return diagnose(trace)
    from core.roofline.ceilings import cached_ceilings

    return diagnose(trace, facts.arithmetic, facts.ceilings or cached_ceilings())
