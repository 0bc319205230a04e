"""Findings about the machine under the reply: other programs' load, weights read from disk, and tokens that stalled,
each from the engine's own counters over the reply (core/timing/engine_counters.py)."""

from __future__ import annotations

import statistics

from core.diagnosis.words import duration, share, times
from core.timing.cpu_share import CONTENDED_SHARE, WAIT_POLICY_ADVICE
from core.timing.finding import Finding
from core.timing.trace import ReplyTrace

# A major fault reads a page (with read-ahead, more) from disk. A few are the Python modules a first reply imports;
# this many are the weights.
FAULTS_FROM_DISK = 64
# Or this much read from storage: with read-ahead a fault reads megabytes (the 98 MB model read cold: 15 faults).
READ_FROM_DISK = 8 * 1024 * 1024
# Other programs using at least this share of the machine's cores over a reply took what the engine lost.
OTHERS_SHARE = 0.2
# A token whose interval is this many times the median of the model's own steps stalled.
STALL_MULTIPLE = 5.0
STALL_FLOOR_S = 0.005  # and at least this long: below it, no one sees it
# Decode's wait for packing left from the load, at least this long to be said (a few layers' worth is not).
PACKING_FLOOR_S = 0.05
# The window's own CPU while streaming, in cores, above which it took a visible share of a small machine.
WINDOW_CORES = 0.3
# A local reply waited for the engine's compute thread this long, and for this share of its TTFT at least: named.
QUEUE_FLOOR_S = 0.1
QUEUE_SHARE = 0.25


def contention_finding(trace: ReplyTrace) -> list[Finding]:
    """The engine got less of its cores than it asked for, and other programs were using the machine meanwhile
    (/proc/stat): a reply blocked on the disk also gets less, and is not called contended."""
    got, cpu = trace.cpu_share, trace.cpu
    if got is None or cpu is None or got >= CONTENDED_SHARE:
        return []
    others = cpu.others_share
    if others is not None and others < OTHERS_SHARE:
        return []
    taken = others if others is not None else max(0.0, 1.0 - got)  # a chat saved before others were counted
    measured = (
        f"other programs used {share(taken)} of the machine's {cpu.cores} cores over the reply (/proc/stat less the "
        f"engine's own)"
        if others is not None
        else "the engine's CPU time over wall time x threads"
    )
    decode_s = _decode_s(trace)
    return [
        Finding(
            kind="contention",
            summary=f"Other programs took {share(taken)} of the CPU during this reply: its TPOT is not the model's.",
            cause="other programs were using the cores the model computes on",
            evidence=f"the engine's {cpu.threads} threads got {share(got)} of their cores; {measured}",
            figure=taken,
            advice=f"close the busy programs, or use fewer threads; {WAIT_POLICY_ADVICE}",
            cost_s=(decode_s or 0.0) * (1.0 - got),
        )
    ]


def page_fault_finding(trace: ReplyTrace, arithmetic: dict | None = None) -> list[Finding]:
    """arithmetic: the model's shape, whose weight bytes tell a file too big for free memory from one read cold."""
    cpu = trace.cpu
    read = cpu.disk_read_bytes if cpu is not None else None
    if cpu is None or (cpu.major_faults < FAULTS_FROM_DISK and (read or 0) < READ_FROM_DISK):
        return []
    prefill = cpu.token_major_faults[0] if cpu.token_major_faults else None
    decode = cpu.major_faults - prefill if prefill is not None else None
    split = f" ({prefill:,} before the first token, {decode:,} during decode)" if prefill is not None else ""
    amount = f"{read / 1e6:,.0f} MB read from disk, " if read else ""
    stalled = sum(interval for interval, faults in zip(_intervals(trace), cpu.token_major_faults[1:]) if faults)
    return [
        Finding(
            kind="page_faults",
            summary=(
                f"The model's weights were read from disk during this reply: {amount}{cpu.major_faults:,} major "
                f"page faults{split}."
            ),
            cause=_why_from_disk(cpu.memory_available_bytes, (arithmetic or {}).get("weight_bytes")),
            evidence=f"{amount}{cpu.major_faults:,} major page faults in the engine over the reply{split}",
            figure=float(read if read else cpu.major_faults),
            advice=(
                "free memory (close programs), or a smaller file; a reply right after the model's file was read cold "
                "pays this once"
            ),
            cost_s=stalled or (trace.metrics().ttft_s if prefill else None),
        )
    ]


def _why_from_disk(available: int | None, weights: int | None) -> str:
    if available is not None and weights and available < weights:
        return (
            f"the model did not fit in free memory: {available / 1e9:,.1f} GB available for {weights / 1e9:,.1f} GB of "
            f"weights"
        )
    if available is not None and weights:
        return (
            f"the model's file was not all in the page cache (read cold, or pushed out): it fits, {available / 1e9:,.1f} "
            f"GB available for {weights / 1e9:,.1f} GB of weights"
        )
    return "the model's file was not all in memory (not read yet, pushed out, or too big for free memory)"


def stall_finding(trace: ReplyTrace) -> list[Finding]:
    """Tokens far slower than the model's own steps, and what the engine's counters saw at each (a local reply only:
    over a network a chunk is not a token, and the engine's counters are the server's)."""
    if trace.cpu is None:
        return []
    intervals = _intervals(trace)  # intervals[i] ends at token i + 1
    stepped = _step_tokens(trace)
    own = [interval for index, interval in enumerate(intervals) if index + 1 in stepped]
    if len(own) < 4:
        return []
    median = statistics.median(own)
    limit = max(STALL_MULTIPLE * median, STALL_FLOOR_S)
    cpu = trace.cpu
    slow = [
        index + 1
        for index, interval in enumerate(intervals)
        if interval > limit and index + 1 in stepped and not _paused_during(trace, cpu.packing_pauses, index + 1)
    ]  # a token that waited for packing is packing_finding's
    if not slow:
        return []
    preempted = [token for token in slow if token in _preempted_tokens(cpu.token_preemptions)]
    faulted = [token for token in slow if token < len(cpu.token_major_faults) and cpu.token_major_faults[token]]
    collected = [token for token in slow if _paused_during(trace, cpu.gc_pauses, token)]
    reasons = []
    if preempted:
        reasons.append(f"at {_count(preempted, slow)} the engine's threads were descheduled for other programs")
    if faulted:
        reasons.append(f"at {_count(faulted, slow)} weights were read from disk (major page faults)")
    if collected:
        pause = sum(_paused_during(trace, cpu.gc_pauses, token) for token in collected)
        reasons.append(f"at {_count(collected, slow)} Python's garbage collector paused the engine ({duration(pause)})")
    explained = set(preempted) | set(faulted) | set(collected)
    if not explained:
        reasons.append("the engine's counters show no cause for " + ("it" if len(slow) == 1 else "any of them"))
    elif len(explained) < len(slow):
        reasons.append(f"the engine's counters show no cause for the other {len(slow) - len(explained)}")
    start = trace.request_start_ns
    at = [(trace.timestamps_ns[token] - start) / 1e9 for token in slow]
    excess = sum(intervals[token - 1] - median for token in slow)
    tokens = f"{len(slow)} token{'s' if len(slow) > 1 else ''}"
    cause = "; ".join(reasons)
    return [
        Finding(
            kind="stalls",
            summary=f"{tokens} took over {STALL_MULTIPLE:g}x the median interval (at {times(at)}); {cause}.",
            cause=cause,
            evidence=(
                f"{tokens} with intervals over {duration(limit)} against a median of {duration(median)}, "
                f"{duration(excess)} lost in all"
            ),
            figure=float(len(slow)),
            advice=_stall_advice(bool(preempted), bool(faulted), bool(collected)),
            cost_s=excess,
        )
    ]


def queue_finding(trace: ReplyTrace) -> list[Finding]:
    """A local reply that waited for the engine's compute thread before its prompt was read: the engine was still
    busy with earlier work (a race or a Lab run going on, a reply still stopping). Seen in a black-box pass: a chat
    message sent after a race's window was closed waited 3.4 s of its 3.5 s TTFT, and the diagnosis said nothing."""
    if trace.cpu is None or trace.prompt_ready_ns is None or trace.compute_started_ns is None:
        return []
    ttft = trace.metrics().ttft_s
    wait = max(trace.compute_started_ns - trace.prompt_ready_ns, 0) / 1e9
    if ttft is None or wait < QUEUE_FLOOR_S or wait < QUEUE_SHARE * ttft:
        return []
    return [
        Finding(
            kind="queue",
            summary=f"This reply waited {duration(wait)} for the engine before its prompt was read: "
            f"{share(wait / ttft)} of its TTFT.",
            cause="the engine's compute thread was still busy with earlier work (a race, a Lab run, a reply stopping)",
            evidence=f"from the prompt ready to the reply's job starting: {duration(wait)} of a TTFT of "
            f"{duration(ttft)}",
            figure=wait,
            advice="let a race or a Lab run end (or stop it) before asking",
            cost_s=wait,
        )
    ]


def window_finding(trace: ReplyTrace) -> list[Finding]:
    cores = trace.window_cpu_share
    if cores is None or cores < WINDOW_CORES:
        return []
    return [
        Finding(
            kind="window",
            summary=f"The window itself used {cores:.2f} of a core while this reply streamed.",
            cause="drawing the reply and its meter took CPU the model could have used",
            evidence=f"the window process's CPU time over the reply: {cores:.2f} cores",
            figure=cores,
            advice="turn streaming off (Ctrl+T) or fold the meter away while it streams",
        )
    ]


def packing_finding(trace: ReplyTrace) -> list[Finding]:
    """Decode waited for the packing its load had left for later (core/model/idle_packing.py): once after a load, in
    a reply asked for before the engine was idle long enough to pack."""
    if trace.cpu is None or len(trace.timestamps_ns) < 2:
        return []
    waits = {
        token: _paused_during(trace, trace.cpu.packing_pauses, token) for token in range(1, len(trace.timestamps_ns))
    }
    waits = {token: paused for token, paused in waits.items() if paused}
    paused = sum(waits.values())
    if paused < PACKING_FLOOR_S:
        return []
    tokens = ", ".join(str(token) for token in waits)
    return [
        Finding(
            kind="packing",
            summary=f"Decode waited {duration(paused)} while the engine packed the weights its load had left for later.",
            cause="the reply was asked for as the model became ready, before the engine had packed its weights while idle",
            evidence=f"{duration(paused)} of packing inside the interval before token {tokens}",
            figure=paused,
            advice="it happens once after a load: a message sent a few seconds after the model is ready waits for none",
            cost_s=paused,
        )
    ]


def _step_tokens(trace: ReplyTrace) -> set[int]:
    """The tokens whose interval holds a step of the model's own: a decode step's token, or the first token a verify
    pass gave. The rest of a pass's tokens (its other accepted drafts and its own token after them) come out
    microseconds later and hold no step; a speculating reply without the passes' marks (an older chat) has none
    that can be told apart, so no stall is looked for."""
    tokens = set(range(1, len(trace.timestamps_ns)))
    report = trace.speculation
    if report is not None and report.pass_marks:
        for first, drafted, rejected in report.pass_marks:
            tokens -= set(range(first + 1, first + drafted - rejected + 1))
        return tokens
    if report is not None and report.accepted:
        return set()  # a speculating reply saved without its passes' marks: which tokens held a step is not known
    return tokens


def _preempted_tokens(preemptions: list[int]) -> set[int]:
    """Tokens whose interval saw clearly more preemptions than the reply's usual token: a few a token are the
    ordinary traffic of a machine with other work (measured 1-5 a token on 2 cores with other programs busy)."""
    if len(preemptions) < 3:
        return set()
    usual = statistics.median(preemptions[1:])
    return {token for token, count in enumerate(preemptions) if token and count > max(2 * usual, usual + 2)}


def _stall_advice(preempted: bool, faulted: bool, collected: bool) -> str:
    advice = []
    if preempted:
        advice.append("close the programs competing for the cores")
    if faulted:
        advice.append("free memory so the weights stay in it")
    if collected:
        advice.append("a collection is the engine's own pause; it is rare and short")
    return "; ".join(advice)


def _count(found, slow) -> str:
    return "all of them" if len(set(found)) == len(slow) and len(slow) > 1 else f"{len(set(found))}"


def _intervals(trace: ReplyTrace) -> list[float]:
    stamps = trace.timestamps_ns
    return [(later - earlier) / 1e9 for earlier, later in zip(stamps, stamps[1:])]


def _decode_s(trace: ReplyTrace) -> float | None:
    stamps = trace.timestamps_ns
    return (stamps[-1] - stamps[0]) / 1e9 if len(stamps) > 1 else None


def _paused_during(trace: ReplyTrace, pauses: list[tuple[int, int]], token: int) -> float:
    """Seconds of the pauses ((start, duration) in ns) inside token's interval (the previous token's stamp to its own)."""
    if token < 1:
        return 0.0
    begin, end = trace.timestamps_ns[token - 1], trace.timestamps_ns[token]
    paused = 0
    for started, took in pauses:
        paused += max(0, min(end, started + took) - max(begin, started))
    return paused / 1e9
