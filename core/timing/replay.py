"""An exported trace read back for replay: its tokens' texts and times, checked, and rescheduled to a chosen TTFT and TPOT."""

from __future__ import annotations

import json
from dataclasses import dataclass

from core.errors import LatencyLabError

TRACE_FORMAT = "latencylab-trace/1"
MAX_TRACE_BYTES = 64 * 1024 * 1024


class ReplayFileError(LatencyLabError):
    """The file is not a trace export this version can replay."""


@dataclass(frozen=True)
class ReplayReply:
    """One reply of an export: token texts and their times in seconds since request start (rising)."""

    texts: tuple[str, ...]
    times_s: tuple[float, ...]
    prompt_tokens: int | None = None
    cached_tokens: int | None = None  # from the prompt cache; None where the export does not say

    @property
    def prompt_line(self) -> str:
        """The prompt as the meter showed it when recorded: "465 tokens, 440 cached"."""
        if not self.prompt_tokens:
            return "prompt: not recorded"
        cached = "" if self.cached_tokens is None else f", {self.cached_tokens:,} cached"
        return f"prompt: {self.prompt_tokens:,} tokens{cached}"

    @property
    def ttft_s(self) -> float:
        return self.times_s[0]

    @property
    def tpot_s(self) -> float | None:
        """(E2E − TTFT) / (N − 1), vLLM's definition; None for a one-token reply."""
        return (self.times_s[-1] - self.times_s[0]) / (len(self.times_s) - 1) if len(self.times_s) > 1 else None

    def rescheduled(self, ttft_s: float, tpot_s: float | None) -> tuple[float, ...]:
        """Token times for a replay at this TTFT and TPOT: the first at ttft_s, the later gaps scaled alike,
        so the reply's own rhythm (its slow and fast steps) is kept."""
        scale = tpot_s / self.tpot_s if tpot_s is not None and self.tpot_s else 1.0
        return tuple(ttft_s + (t - self.ttft_s) * scale for t in self.times_s)


def read_replay(data: bytes) -> list[ReplayReply]:
    """The replies of a JSON trace export that have tokens; raises ReplayFileError saying what is wrong."""
    if len(data) > MAX_TRACE_BYTES:
        raise ReplayFileError(f"the file is larger than {MAX_TRACE_BYTES // 2**20} MB; a trace export is smaller")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ReplayFileError(f"the file is not JSON text ({type(error).__name__})") from None
    if not isinstance(document, dict) or document.get("format") != TRACE_FORMAT:
        found = document.get("format") if isinstance(document, dict) else None
        raise ReplayFileError(f"not a Latency Lab trace export (format is {found!r}, expected {TRACE_FORMAT!r})")
    replies = document.get("replies")
    if not isinstance(replies, list):
        raise ReplayFileError("replies is missing or not a list")
    found = [_reply(item, index) for index, item in enumerate(replies)]
    found = [reply for reply in found if reply is not None]
    if not found:
        raise ReplayFileError("the trace has no reply with tokens to replay")
    return found


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _reply(item, index: int) -> ReplayReply | None:
    where = f"replies[{index}]"
    if not isinstance(item, dict) or not isinstance(item.get("tokens"), list):
        raise ReplayFileError(f"{where}.tokens is missing or not a list")
    texts: list[str] = []
    times: list[float] = []
    for row_index, row in enumerate(item["tokens"]):
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise ReplayFileError(f"{where}.tokens[{row_index}].text is missing or not text")
        t_s = row.get("t_s")
        if not isinstance(t_s, (int, float)) or isinstance(t_s, bool) or not 0 <= t_s < 1e6:
            raise ReplayFileError(f"{where}.tokens[{row_index}].t_s must be seconds since request start")
        if times and t_s < times[-1]:
            raise ReplayFileError(f"{where}.tokens[{row_index}].t_s goes back in time")
        texts.append(row["text"])
        times.append(float(t_s))
    counts = [_count(item.get(key)) for key in ("prompt_tokens", "cached_tokens")]
    return ReplayReply(tuple(texts), tuple(times), *counts) if texts else None
