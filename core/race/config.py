"""What a race is asked: the prompt, both sides, the mode (each alone or live), a shared history and the budget."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.errors import InvalidSettingsError
from core.race.sides import RaceSide, check_race
from core.settings import LatencyBudget

EACH_ALONE, LIVE = "each alone", "live"
MODE_WORDS = {
    EACH_ALONE: "A ran alone, then B ran alone (neither slowed the other); both are played back from Send, each at "
    "its own measured times",
    LIVE: "A and B ran at the same time: on one machine they share the CPU, so each may be slower than alone",
}


@dataclass(frozen=True)
class RaceConfig:
    prompt: str
    a: RaceSide
    b: RaceSide
    live: bool = False
    system_prompt: str = ""
    history: tuple[tuple[str, str], ...] = ()  # (role, text) turns before the prompt, the same for both sides
    budget: LatencyBudget = field(default_factory=LatencyBudget)

    def __post_init__(self) -> None:
        if not self.prompt.strip():
            raise InvalidSettingsError("the race needs a prompt; got an empty one.")
        check_race(self.a, self.b, self.live)

    @property
    def mode(self) -> str:
        return LIVE if self.live else EACH_ALONE

    def to_dict(self) -> dict:
        return {
            "prompt": self.prompt,
            "system_prompt": self.system_prompt,
            "history": [list(turn) for turn in self.history],
            "mode": self.mode,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "budget": self.budget.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> RaceConfig:
        try:
            return cls(
                str(data["prompt"]),
                RaceSide.from_dict(data["a"]),
                RaceSide.from_dict(data["b"]),
                data.get("mode") == LIVE,
                str(data.get("system_prompt", "")),
                tuple((str(role), str(text)) for role, text in data.get("history", ())),
                LatencyBudget(**data.get("budget", {})),
            )
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, InvalidSettingsError):
                raise
            raise InvalidSettingsError(f"the race's settings are incomplete ({error})") from None
