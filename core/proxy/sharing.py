"""How many other requests shared the server with a proxied one, and the same model's pace alone to weigh it against."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from core.proxy.record import ProxyRecord
from core.timing.events import SharingReport

# The latest requests alone that the baseline is the median of: recent enough to be the same server's state.
ALONE_KEPT = 16


def sharing_report(record: ProxyRecord, others: Iterable[ProxyRecord]) -> SharingReport:
    """record's sharing, with the median TPOT of the latest of `others` that asked the same model, ran with no other
    request in flight, and counted their tokens as record did (a chunk's pace is not a token's)."""
    alone = [
        other.tpot_s
        for other in sorted(others, key=lambda other: other.id)
        if other.id != record.id
        and other.model == record.model
        and other.max_in_flight == 0
        and other.error is None
        and other.tokens_are_chunks == record.tokens_are_chunks
        and other.tpot_s is not None
    ][-ALONE_KEPT:]
    return SharingReport(
        others_at_start=record.in_flight_at_start,
        others_most=record.max_in_flight,
        alone_tpot_s=statistics.median(alone) if alone else None,
        alone_count=len(alone),
    )
