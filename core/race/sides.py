"""The two configurations of a race: each side's settings from KEY=VALUE pairs, checked alone and against each other.

The keys are the common command-line options' names (`--max-new-tokens` is max_new_tokens); switches take on or
off. Every refusal is one line that names the side and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from core.errors import InvalidSettingsError, LatencyLabError
from core.model.source import EMBEDDED_SPEC
from core.remote.spec import PROTOCOLS, RemoteSpec, is_remote_spec
from core.settings import (
    DECODE_LOOP,
    DEVICE,
    DRAFT_TOKENS,
    DTYPE,
    MAX_NEW_TOKENS,
    SEED,
    SERVER_TIMEOUT,
    SPECULATION,
    TEMPERATURE,
    TOP_P,
    GenerationSettings,
    NumberLimit,
)

SWITCHES = ("streaming", "prompt_cache")
SERVER_KEYS = ("served_model", "protocol", "server_timeout")
LOCAL_KEYS = ("dtype", "device", "decode_loop", "speculation", "draft_tokens", "draft_model")
NUMBERS: dict[str, NumberLimit[Any]] = {
    "max_new_tokens": MAX_NEW_TOKENS,
    "temperature": TEMPERATURE,
    "top_p": TOP_P,
    "seed": SEED,
    "server_timeout": SERVER_TIMEOUT,
    "draft_tokens": DRAFT_TOKENS,
}
KEYS = (
    "model",
    "dtype",
    "device",
    *SWITCHES,
    "max_new_tokens",
    "temperature",
    "top_p",
    "seed",
    "decode_loop",
    "speculation",
    "draft_tokens",
    "draft_model",
    *SERVER_KEYS,
)
ON, OFF = "on", "off"


@dataclass(frozen=True)
class RaceSide:
    """One configuration: what to load, how to sample, and whether the reply streams. given: the keys set for this
    side on purpose (a server refuses a dtype given to it, not the default it inherits)."""

    name: str
    model: str = EMBEDDED_SPEC
    dtype: str = DTYPE.default
    device: str = DEVICE.default
    streaming: bool = True
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    server_timeout_s: float | None = None
    given: tuple[str, ...] = ()

    @property
    def remote(self) -> bool:
        return is_remote_spec(self.model)

    @property
    def load_key(self) -> tuple:
        """Two sides with the same key can share one loaded model."""
        return (self.model, None, None) if self.remote else (self.model, self.dtype, self.device)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "model": self.model,
            "dtype": self.dtype,
            "device": self.device,
            "streaming": self.streaming,
            "settings": self.settings.to_dict(),
            "server_timeout_s": self.server_timeout_s,
            "given": list(self.given),
        }

    @classmethod
    def from_dict(cls, data: dict) -> RaceSide:
        try:
            return cls(
                name=str(data["name"]),
                model=str(data["model"]),
                dtype=str(data["dtype"]),
                device=str(data["device"]),
                streaming=bool(data["streaming"]),
                settings=GenerationSettings(**data["settings"]),
                server_timeout_s=data.get("server_timeout_s"),
                given=tuple(data.get("given", ())),
            )
        except (KeyError, TypeError) as error:
            raise InvalidSettingsError(f"a race side's settings are incomplete ({error})") from None

    def setting_words(self) -> dict[str, str]:
        """Each setting a person could race on, in words, for naming what differs between A and B."""
        settings = self.settings
        words = {
            "model": _model_words(self.model),
            "streaming": "streaming" if self.streaming else "not streaming",
            "prompt_cache": "prompt cache on" if settings.prompt_cache else "prompt cache off",
            "max_new_tokens": f"{settings.max_new_tokens} new tokens",
            "temperature": "greedy" if settings.greedy else f"temperature {settings.temperature:g}",
            "top_p": f"top-p {settings.top_p:g}",
            "seed": "random seed" if settings.seed is None else f"seed {settings.seed}",
            "decode_loop": f"{settings.decode_loop} loop",
            "speculation": "no speculation"
            if settings.speculation == "off"
            else f"speculation ({_drafter_words(settings)}, {settings.draft_tokens} drafts)",
        }
        if not self.remote:
            words["dtype"] = self.dtype
            words["device"] = self.device
        return words


def parse_side(name: str, pairs: list[str], base: RaceSide | None = None) -> RaceSide:
    """A side from KEY=VALUE pairs over a base (the options given to both); InvalidSettingsError in one line."""
    base = base if base is not None else RaceSide(name)
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InvalidSettingsError(f"--{name.lower()} takes KEY=VALUE pairs (streaming=off); got {pair!r}.")
        if key not in KEYS:
            raise InvalidSettingsError(f"--{name.lower()}: unknown key {key!r}; the keys are {', '.join(KEYS)}.")
        value = value.strip()
        if not value:  # `--a model=` used to mean the embedded model without a word
            example = "model=embedded" if key == "model" else f"{key}=VALUE"
            raise InvalidSettingsError(f"--{name.lower()} gives {key} no value; write {example}.")
        if key in values and values[key] != value:
            raise InvalidSettingsError(f"--{name.lower()} gives {key} twice: {values[key]!r} and {value!r}.")
        values[key] = value
    return side_from_values(name, values, base)


def side_from_values(name: str, values: Mapping[str, object], base: RaceSide) -> RaceSide:
    """values: key -> text (from the command line) or a typed value (from the window's form)."""
    side = replace(base, name=name)
    sampling: dict[str, Any] = {}
    for key, value in values.items():
        if key in SWITCHES:
            switch = _switch(name, key, value)
            if key == "streaming":
                side = replace(side, streaming=switch)
            else:
                sampling[key] = switch
        elif key == "model":
            side = replace(side, model=str(value).strip() or EMBEDDED_SPEC)
        elif key == "dtype":
            side = replace(side, dtype=_choice(name, DTYPE, value))
        elif key == "device":
            side = replace(side, device=_choice(name, DEVICE, value))
        elif key == "decode_loop":
            sampling[key] = _choice(name, DECODE_LOOP, value)
        elif key == "speculation":
            sampling[key] = _choice(name, SPECULATION, value)
        elif key == "draft_model":
            sampling[key] = str(value).strip()
            sampling.setdefault("speculation", "draft")
        elif key in ("served_model", "protocol"):
            pass  # folded into the model's spec below, once the model is known
        else:
            number = _number(name, key, value)
            if key == "server_timeout":
                side = replace(side, server_timeout_s=number)
            else:
                sampling[key] = number
    try:
        side = replace(side, settings=replace(side.settings, **sampling))
    except InvalidSettingsError as error:
        raise InvalidSettingsError(f"side {name}: {error}") from None
    side = replace(side, given=tuple(sorted(set(base.given) | set(values))))
    return _with_server_choice(side, values)


def check_race(a: RaceSide, b: RaceSide, live: bool) -> None:
    """Settings that cannot go together, each refused in one line."""
    for side in (a, b):
        if side.remote:
            local = [key for key in LOCAL_KEYS if key in side.given]
            if local:
                raise InvalidSettingsError(
                    f"side {side.name}: {', '.join(local)} applies only to a local model, and "
                    f"its model is a server ({RemoteSpec.parse(side.model).base_url})."
                )
        else:
            served = [key for key in SERVER_KEYS if key in side.given]
            if served:
                raise InvalidSettingsError(
                    f"side {side.name}: {', '.join(served)} applies only with a server URL as its model."
                )
    if live and not a.remote and not b.remote:
        raise InvalidSettingsError(
            "live mode runs A and B at once, but both are local models: they would take turns on this process's one "
            "compute thread rather than race. Race them one after the other (the default), or race a local model "
            "against a server."
        )


def differences(a: RaceSide, b: RaceSide) -> list[str]:
    """The settings A and B differ in, by key, in the order a person would name them."""
    words_a, words_b = a.setting_words(), b.setting_words()
    order = (
        "streaming",
        "model",
        "dtype",
        "prompt_cache",
        "max_new_tokens",
        "temperature",
        "top_p",
        "seed",
        "decode_loop",
        "speculation",
        "device",
    )
    return [key for key in order if words_a.get(key) != words_b.get(key)]


def labels(a: RaceSide, b: RaceSide) -> tuple[str, str]:
    """Each side named by what sets it apart: ('streaming', 'not streaming'); 'same settings' when nothing does."""
    keys = differences(a, b)
    if not keys:
        return "same settings", "same settings"
    words_a, words_b = a.setting_words(), b.setting_words()
    if "model" in keys and a.remote != b.remote:
        # A local model against a server: its precision is part of what is local, a server has none to compare.
        keys = [key for key in keys if key not in ("dtype", "device", "decode_loop")]
        for words, side in ((words_a, a), (words_b, b)):
            if not side.remote:
                words["model"] = f"local {words['model']} ({words['dtype']})"
    keys = keys[:2]
    return ", ".join(words_a[key] for key in keys), ", ".join(words_b[key] for key in keys)


def _with_server_choice(side: RaceSide, values: Mapping[str, object]) -> RaceSide:
    served, protocol = values.get("served_model"), values.get("protocol")
    if not side.remote or (served is None and protocol is None):
        return side
    if protocol is not None and protocol not in PROTOCOLS:
        raise InvalidSettingsError(
            f"side {side.name}: protocol must be one of: {', '.join(PROTOCOLS)}; got {protocol!r}."
        )
    try:
        spec = RemoteSpec.parse(side.model).with_choice(
            model=str(served) if served else None, protocol=protocol or None
        )
    except LatencyLabError as error:
        raise InvalidSettingsError(f"side {side.name}: {error}") from None
    return replace(side, model=spec.text())


def _switch(name: str, key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in (ON, OFF):
        raise InvalidSettingsError(f"side {name}: {key} takes on or off; got {value!r}.")
    return text == ON


def _choice(name: str, limit, value: object) -> str:
    try:
        return limit.check(str(value).strip())
    except InvalidSettingsError as error:
        raise InvalidSettingsError(f"side {name}: {error}") from None


def _number(name: str, key: str, value: object):
    limit = NUMBERS[key]
    if isinstance(value, str):
        text = value.strip()
        if key == "seed" and text.lower() in ("", "random", "none"):
            return None
        try:
            value = int(text) if limit.whole else float(text)
        except ValueError:
            kind = "a whole number" if limit.whole else "a number"
            raise InvalidSettingsError(f"side {name}: {limit.label} must be {kind}; got {text!r}.") from None
    if value is None and key == "seed":
        return None
    try:
        limit.check(value)
    except InvalidSettingsError as error:
        raise InvalidSettingsError(f"side {name}: {error}") from None
    return value


def _model_words(spec: str) -> str:
    if is_remote_spec(spec):
        parsed = RemoteSpec.parse(spec)
        return f"server {parsed.host}:{_port(parsed.base_url)}" + (f" ({parsed.model})" if parsed.model else "")
    return spec.rstrip("/").rsplit("/", 1)[-1] or spec


def _port(url: str) -> str:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    return str(parts.port or (443 if parts.scheme == "https" else 80))


def side_summary(side: RaceSide) -> str:
    """The side's whole configuration in one line, for headers and the CLI."""
    words = side.setting_words()
    keys = ("model", "dtype", "streaming", "prompt_cache", "max_new_tokens", "temperature")
    return ", ".join(words[key] for key in keys if key in words)


def _drafter_words(settings: GenerationSettings) -> str:
    if settings.speculation == "draft" and settings.draft_model:
        from pathlib import PurePath

        return f"draft model {PurePath(settings.draft_model).name}"
    return settings.speculation
