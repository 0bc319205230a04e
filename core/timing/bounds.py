"""The bounded types a trace's saved fields are declared with: msgspec holds a trace read from a file to them."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

INT64 = 2**63 - 1
MAX_TOKENS_PER_REPLY = 1_000_000  # longer than any context window here
DAY_S = 86_400.0

# A stamp or a count: a 400-digit number broke the metrics and the plots.
Int64 = Annotated[int, Meta(ge=-INT64, le=INT64)]
Seconds = Annotated[float, Meta(ge=0.0, le=DAY_S)]  # a duration a reply measured: from 0 to a day
Fraction = Annotated[float, Meta(ge=0.0, le=1.0)]
TokenIds = Annotated[list[Int64], Meta(max_length=MAX_TOKENS_PER_REPLY)]
# StopReason's values, as a trace keeps them (tests/timing/test_trace_codec.py holds the two to each other).
StopReasonValue = Literal["eos", "max_tokens", "stopped", "error"]
