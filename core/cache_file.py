"""Cache files read back: checked against a schema of types and ranges, a bad one set aside and rebuilt, said once.

A cache file parses and is trusted ever after unless it is checked: `{"precision": "float16"}` as the GEMM choice failed
every long prompt on every launch, and a ceiling of 0 or "fast" ended `ask --json` in a traceback after its reply. Each
cache's reader gives read_cache_json its schema (built from the checks below); a file that breaks it, or that is not a
regular file of bounded size, is renamed NAME.bad (the one before it replaced), so it is measured or built again, and
the reason is said once, through take_notices(), by whoever shows messages: the CLI on stderr, the window in its chat.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from core.bounded_read import NotReadable, read_regular_file_and_status
from core.errors import LatencyLabError

# Far above any cache file's size (a ceilings file is about 2 kB): past it, the file is not ours.
MAX_CACHE_FILE_BYTES = 1024 * 1024
SET_ASIDE_SUFFIX = ".bad"

_Value = TypeVar("_Value")
Check = Callable[[Any, str], Any]  # (value, where) -> the value, or CacheFileError naming where


class CacheFileError(LatencyLabError):
    """A cache file's field is not of its type or outside its range; the message names the field."""


# -- the checks a schema is built from -----------------------------------------------------------------------------


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def number(low: float, high: float) -> Check:
    def check(value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CacheFileError(f"{where} must be a number, not {_kind(value)}")
        if not (math.isfinite(value) and low <= value <= high):
            raise CacheFileError(f"{where} must be from {low:g} to {high:g}, not {value!r}")
        return float(value)

    return check


def positive(high: float) -> Check:
    """A number above zero (a time, a rate: what a plot takes the logarithm of or divides by) and at most high."""

    def check(value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CacheFileError(f"{where} must be a number, not {_kind(value)}")
        if not (math.isfinite(value) and 0 < value <= high):
            raise CacheFileError(f"{where} must be above 0 and at most {high:g}, not {str(value)[:40]}")
        return value

    return check


def whole(low: int, high: int) -> Check:
    def check(value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CacheFileError(f"{where} must be a whole number, not {_kind(value)}")
        if not low <= value <= high:
            raise CacheFileError(f"{where} must be from {low:,} to {high:,}, not {value!r}")
        return value

    return check


def text(longest: int = 1000) -> Check:
    def check(value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise CacheFileError(f"{where} must be text, not {_kind(value)}")
        if len(value) > longest:
            raise CacheFileError(f"{where} must be at most {longest:,} characters, not {len(value):,}")
        return value

    return check


def one_of(*choices: str) -> Check:
    def check(value: Any, where: str) -> str:
        if value not in choices:
            raise CacheFileError(f"{where} must be one of {', '.join(choices)}, not {str(value)[:40]!r}")
        return value

    return check


def flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise CacheFileError(f"{where} must be true or false, not {_kind(value)}")
    return value


def optional(check: Check) -> Check:
    return lambda value, where: None if value is None else check(value, where)


def list_of(check: Check, most: int, exactly: int | None = None) -> Check:
    def checked(value: Any, where: str) -> list:
        if not isinstance(value, list):
            raise CacheFileError(f"{where} must be a list, not {_kind(value)}")
        if exactly is not None and len(value) != exactly:
            raise CacheFileError(f"{where} must hold {exactly} items, not {len(value)}")
        if len(value) > most:
            raise CacheFileError(f"{where} must hold at most {most:,} items, not {len(value):,}")
        return [check(item, f"{where}[{index}]") for index, item in enumerate(value)]

    return checked


def mapping(keys: Check, values: Check, most: int) -> Check:
    def checked(value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise CacheFileError(f"{where} must be an object, not {_kind(value)}")
        if len(value) > most:
            raise CacheFileError(f"{where} must hold at most {most:,} entries, not {len(value):,}")
        return {
            keys(key, f"{where} key {str(key)[:40]!r}"): values(item, f"{where}.{key}") for key, item in value.items()
        }

    return checked


def record(fields: dict[str, Check], required: tuple[str, ...] = ()) -> Check:
    """An object whose known fields each pass their check; a required one must be there. Unknown fields are left."""

    def checked(value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise CacheFileError(f"{where} must be an object, not {_kind(value)}")
        missing = [name for name in required if name not in value]
        if missing:
            raise CacheFileError(f"{where} has no {missing[0]}")
        prefix = "" if where == "the file" else f"{where}."
        return {name: fields[name](item, prefix + name) if name in fields else item for name, item in value.items()}

    return checked


# -- reading, setting aside, saying ---------------------------------------------------------------------------------

_notices: list[str] = []
_said: set[str] = set()
_lock = threading.Lock()


def read_cache_json(path: Path, parse: Callable[[Any], _Value], what: str, then: str) -> _Value | None:
    """The cache file's document through parse (a schema check that builds the value), or None: absent (nothing is
    said), or bad (set aside, and said once: "... set aside as NAME.bad; {then}"). what names the cache for people
    ("cached ceilings"), then says what happens next ("they are measured again when the Lab next needs them")."""
    try:
        data, _ = read_regular_file_and_status(path, MAX_CACHE_FILE_BYTES)
        document = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
        return parse(document)
    except FileNotFoundError:
        return None
    except (NotReadable, CacheFileError) as bad:
        set_aside(path, what, str(bad), then)
    except (UnicodeDecodeError, ValueError, RecursionError) as bad:
        set_aside(path, what, f"it is not JSON ({type(bad).__name__})", then)
    except OSError:
        pass  # unreadable here (permissions): measured or built again, and the file is left as it is
    return None


def set_aside(path: Path, what: str, reason: str, then: str) -> None:
    """Rename the bad file (or folder, or link) NAME.bad, out of the way of the one built again, and say so once."""
    aside = path.with_name(path.name + SET_ASIDE_SUFFIX)
    try:
        if aside.is_dir() and not aside.is_symlink():
            import shutil

            shutil.rmtree(aside)
        os.replace(path, aside)
        where = f"set aside as {aside.name}"
    except OSError as error:
        where = f"left in place ({error.strerror or type(error).__name__})"
    say_once(f"the {what} ({path}) was damaged: {reason}; {where}. {then[:1].upper()}{then[1:]}.")


def say_once(notice: str) -> None:
    with _lock:
        if notice not in _said:
            _said.add(notice)
            _notices.append(notice)


def take_notices() -> list[str]:
    """What was set aside since the last call, each said once: whoever shows messages takes them."""
    with _lock:
        notices = list(_notices)
        _notices.clear()
        return notices


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")
