"""The finding of a proxied request that shared the server: its decode's pace beside others, against the same
model's requests that ran alone."""

from __future__ import annotations

from core.diagnosis.server import FELT_S
from core.diagnosis.words import duration
from core.timing.finding import Finding
from core.timing.trace import ReplyTrace

# A TPOT this many times the pace alone is the sharing's doing; below it, a server's pace moves as much on its own.
SLOWER = 1.1
# A pace alone under this is chunks that reached the proxy together, not a model's step: no ratio is made of it.
BURST_S = 1e-4
# A request alone is called slow only well past its model's usual pace alone: a server's pace moves on its own.
SLOWER_ALONE = 1.5


def sharing_finding(trace: ReplyTrace) -> list[Finding]:
    sharing = trace.sharing
    if sharing is None:
        return []
    if sharing.others_most < 1:
        return _alone_but_slower(trace)
    metrics = trace.metrics()
    tpot, alone = metrics.tpot_s, sharing.alone_tpot_s
    most = sharing.others_most
    shared = f"up to {most} other request{'s' if most > 1 else ''}"
    counted = (
        f"{most} other request{'s' if most > 1 else ''} in flight through the proxy at most while it ran, "
        f"{sharing.others_at_start} when it started"
    )
    ttft = metrics.ttft_s
    # Already running when it started, the others held its first token back too: said, not costed (a first token's
    # time alone depends on the prompt's length, which differs from request to request).
    behind = (
        f"; its first token came {duration(ttft)} after it was sent, behind {sharing.others_at_start} already running"
        if sharing.others_at_start and ttft is not None
        else ""
    )
    if tpot is None or alone is None:
        unknown = (
            "it made one token or was not streamed, so it has no decode pace to weigh"
            if tpot is None
            else f"no request to this model ran alone through the proxy, so what the sharing cost its TPOT "
            f"({duration(tpot)}) is not known"
        )
        return [
            Finding(
                kind="shared_server",
                summary=f"This request shared the server with {shared}; {unknown}{behind}.",
                cause="other requests on the same server may have shared its decode steps",
                evidence=counted,
                figure=float(most),
                advice="send one request to this model alone through the proxy: its pace alone is the yardstick",
            )
        ]
    # Alone, a model's chunks can reach the proxy nearly together: a pace near 0, which anything shared exceeds.
    # Below FELT_S lost over the whole reply no one feels it: five tokens at 0.8 ms against 0.3 ms headed the
    # diagnosis as a server 2.5x as slow.
    lost_s = _lost_s(tpot, alone, metrics.output_tokens)
    if tpot <= alone * SLOWER or lost_s < FELT_S:
        return []
    as_slow = f" ({tpot / alone:.1f}× as slow)" if alone >= BURST_S else " (their chunks came in one burst)"
    return [
        Finding(
            kind="shared_server",
            summary=(
                f"This request shared the server with {shared}: it decoded at {duration(tpot)} a token, against "
                f"{duration(alone)} for this model's requests alone{as_slow}{behind}."
            ),
            cause="other requests on the same server shared its decode steps",
            evidence=(
                f"{counted}; TPOT {duration(tpot)} against {duration(alone)}, the median of the latest "
                f"{sharing.alone_count} request{'s' if sharing.alone_count > 1 else ''} to the same model with none "
                f"beside {'them' if sharing.alone_count > 1 else 'it'}"
            ),
            figure=tpot - alone,  # seconds a token that sharing added
            advice=(
                "fewer requests at once (a server with fewer slots queues them instead: their first tokens wait, this "
                "pace returns), or a server with more cores and memory bandwidth: a step that carries several requests "
                "costs more than one alone once the server's arithmetic, not its memory, sets the pace"
            ),
            cost_s=lost_s,
        )
    ]


def _alone_but_slower(trace: ReplyTrace) -> list[Finding]:
    """A request with nothing beside it through the proxy that still decoded well behind the same model's others alone:
    the server was slower than usual for a cause the proxy cannot see."""
    sharing = trace.sharing
    metrics = trace.metrics()
    tpot = metrics.tpot_s
    alone = sharing.alone_tpot_s if sharing else None
    if sharing is None or tpot is None or alone is None or alone < BURST_S or tpot <= alone * SLOWER_ALONE:
        return []
    lost_s = _lost_s(tpot, alone, metrics.output_tokens)
    if lost_s < FELT_S:
        return []  # slower, but by less than anyone feels over the whole reply
    others = f"{sharing.alone_count} other request{'s' if sharing.alone_count > 1 else ''}"
    return [
        Finding(
            kind="slower_server",
            summary=(
                f"This request ran alone through the proxy but decoded at {duration(tpot)} a token, against "
                f"{duration(alone)} for this model's other requests alone ({tpot / alone:.1f}× as slow)."
            ),
            cause="the server was slower than usual for a cause the proxy cannot see",
            evidence=(
                f"no other request in flight through the proxy while it ran; TPOT {duration(tpot)} against "
                f"{duration(alone)}, the median of the latest {others} to the same model with none beside them"
            ),
            figure=tpot - alone,
            advice=(
                "look at the server's machine: other programs on its cores or memory, clients that talk to the server "
                "directly (the proxy sees only what passes through it), or its model pushed out of memory"
            ),
            cost_s=lost_s,
        )
    ]


def _lost_s(tpot_s: float, alone_s: float, output_tokens: int) -> float:
    """The time a slower pace added over the reply's decode: each interval after the first token."""
    return (tpot_s - alone_s) * max(output_tokens - 1, 0)
