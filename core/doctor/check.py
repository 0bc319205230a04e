"""One line of the doctor's report: what was checked, its figure in words, its value, and what would help."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

OK, WARN, INFO, FAIL = "ok", "warn", "info", "fail"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Check:
    """name: a stable key ("memory", "page_cache", ...); figure: the line a person reads; value: the same figures as
    plain data for --json; status: ok, warn (it slows replies now), info, or
    fail (what was asked about could not be checked: the command exits 1); advice: what would make replies faster
    ("" where nothing needs doing)."""

    name: str
    figure: str
    value: dict[str, Any] = field(default_factory=dict)
    status: str = INFO
    advice: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def unknown(name: str, why: str) -> Check:
    """A check whose figures could not be read here: said so, never a traceback."""
    return Check(name, f"{UNKNOWN} ({why})", {}, INFO)


def gigabytes(count: float) -> str:
    return f"{count / 1e9:,.1f} GB" if count >= 1e9 else f"{count / 1e6:,.0f} MB"
