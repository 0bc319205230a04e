"""Out-of-range generation settings are refused with a message naming the allowed range."""

import pytest

from core.errors import InvalidSettingsError
from core.settings import GenerationSettings, validate_dtype


@pytest.mark.parametrize(
    "kwargs, phrase",
    [
        ({"max_new_tokens": 0}, "max new tokens"),
        ({"max_new_tokens": -5}, "max new tokens"),
        ({"max_new_tokens": 10**9}, "max new tokens"),
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_p": 0.0}, "top-p"),
        ({"top_p": 1.5}, "top-p"),
        ({"seed": -1}, "seed"),
    ],
)
def test_invalid_settings_are_refused(kwargs, phrase):
    with pytest.raises(InvalidSettingsError, match=phrase):
        GenerationSettings(**kwargs)


def test_defaults_are_greedy():
    assert GenerationSettings().greedy
    assert not GenerationSettings(temperature=0.7).greedy


def test_unknown_dtype_is_refused():
    with pytest.raises(
        InvalidSettingsError, match="dtype must be one of: native, float32, bfloat16, int8, int4; got 'float8'"
    ):
        validate_dtype("float8")


def test_native_precision_is_the_default_dtype():
    from core.settings import DTYPE

    assert DTYPE.default == "native" and validate_dtype("native") == "native"


def _saved(tmp_path, **values):
    from PySide6.QtCore import QSettings

    store = QSettings(str(tmp_path / "saved.ini"), QSettings.Format.IniFormat)
    for key, value in values.items():
        store.setValue(key, value)
    store.sync()
    return store


@pytest.mark.parametrize(
    "saved, expected",
    [
        ({"dtype": "float32"}, "native"),  # an older version saved its default: never chosen
        ({"dtype": "int4"}, "int4"),  # only a person could have picked this
        ({"dtype": "bfloat16"}, "bfloat16"),
        ({"dtype": "float32", "dtype_chosen": True}, "float32"),  # picked in this version: kept
        ({"dtype": "float32", "dtype_chosen": False}, "native"),
        ({}, "native"),  # a first launch
    ],
)
def test_saved_dtype_migrates_to_native_unless_it_was_chosen(tmp_path, saved, expected):
    from gui.settings.store import load_window_settings

    assert load_window_settings(_saved(tmp_path, **saved)).dtype == expected


def test_a_dtype_picked_in_the_form_is_saved_as_chosen(qtbot, tmp_path):
    from gui.settings.panel import SettingsPanel
    from gui.settings.store import WindowSettings, load_window_settings, save_window_settings

    panel = SettingsPanel(WindowSettings())
    qtbot.addWidget(panel)
    assert panel.collect(True).dtype == "native" and not panel.collect(True).dtype_chosen
    from PySide6.QtCore import Qt

    qtbot.keyClick(panel.dtype_box, Qt.Key.Key_Down)  # the user moves from native to the next choice
    assert panel.dtype() == "float32"
    store = _saved(tmp_path)
    save_window_settings(panel.collect(True), store)
    assert load_window_settings(store).dtype == "float32"
