"""One finding of a reply's diagnosis: a cause, the measured evidence that shows it, and what would change it."""

from __future__ import annotations

from dataclasses import dataclass

from core.timing.bounds import Seconds


@dataclass(frozen=True)
class Finding:
    """Said as one sentence (summary); the parts apart for `--json`, exports and saved chats.

    kind: a stable key ("prompt_cache", "contention", ...); cause: what slowed the reply, in words; evidence: the
    measurement that shows it, with its figures; figure: the headline number of the evidence (a share, seconds, a
    count); advice: what would change it ("" where nothing would); cost_s: about how much of the reply it took, where
    that can be measured, which ranks the findings.
    """

    kind: str
    summary: str
    cause: str
    evidence: str
    figure: float
    advice: str = ""
    cost_s: Seconds | None = None
