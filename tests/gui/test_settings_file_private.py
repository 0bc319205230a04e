"""The window's settings file holds the model path and the system prompt: it is private to the user."""

import stat
from pathlib import Path

import pytest


@pytest.mark.parametrize("existing_mode", [None, 0o644, 0o666])
def test_the_settings_file_is_0600_and_its_new_folder_0700(qtbot, tmp_path, existing_mode):
    from gui.settings.store import WindowSettings, load_window_settings, open_settings, save_window_settings

    path = Path(open_settings().fileName())
    assert str(path).startswith(str(tmp_path))  # the test profile, never the developer's
    if existing_mode is not None:
        path.parent.mkdir(parents=True)
        path.write_text("[General]\n")
        path.chmod(existing_mode)
    save_window_settings(WindowSettings(model_spec="/home/me/models/secret", system_prompt="my private prompt"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    if existing_mode is None:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_window_settings().system_prompt == "my private prompt"
