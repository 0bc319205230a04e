"""Out-of-range generation settings are refused with a message naming the allowed range."""

import pytest

from core.errors import InvalidSettingsError
from core.settings import GenerationSettings, validate_dtype


@pytest.mark.parametrize("kwargs, phrase", [
    ({"max_new_tokens": 0}, "max new tokens"),
    ({"max_new_tokens": -5}, "max new tokens"),
    ({"max_new_tokens": 10**9}, "max new tokens"),
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": 2.5}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"top_p": 0.0}, "top-p"),
    ({"top_p": 1.5}, "top-p"),
    ({"seed": -1}, "seed"),
])
def test_invalid_settings_are_refused(kwargs, phrase):
    with pytest.raises(InvalidSettingsError, match=phrase):
        GenerationSettings(**kwargs)


def test_defaults_are_greedy():
    assert GenerationSettings().greedy
    assert not GenerationSettings(temperature=0.7).greedy


def test_unknown_dtype_is_refused():
    with pytest.raises(InvalidSettingsError, match="dtype must be one of: float32, bfloat16, int8, int4; got 'float8'"):
        validate_dtype("float8")
