"""Folder…: a model folder, or one of the GGUF files a folder holds (LM Studio and Ollama keep several), loaded
as soon as it is chosen. The files here are four bytes long, so each load is refused and the tiny model stays."""

from __future__ import annotations

from PySide6.QtWidgets import QFileDialog, QInputDialog


def _browse_and_wait_for_the_refusal(qtbot, window):
    with qtbot.waitSignal(window.model_failed, timeout=60_000):
        window.chat_panel.settings_panel.browse_button.click()
    assert "Could not load the model" in window.chat_panel.settings_panel.load_message.text()
    assert window.chat_panel.send_button.isEnabled()  # the model loaded before stays


def _folder_with(tmp_path, *names):
    folder = tmp_path / "models"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(b"GGUF")
    return folder


def test_a_folder_with_several_ggufs_asks_which_one(qtbot, tiny_window, tmp_path, monkeypatch):
    folder = _folder_with(tmp_path, "qwen-Q8_0.gguf", "qwen-Q4_K_M.gguf")
    offered = {}
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(folder))

    def pick(parent, title, label, items, current, editable):
        offered["items"] = list(items)
        return "qwen-Q8_0.gguf", True

    monkeypatch.setattr(QInputDialog, "getItem", pick)
    _browse_and_wait_for_the_refusal(qtbot, tiny_window)
    assert "qwen-Q8_0.gguf" in tiny_window.chat_panel.settings_panel.load_message.text()
    assert offered["items"] == ["qwen-Q4_K_M.gguf", "qwen-Q8_0.gguf"]
    assert tiny_window.chat_panel.settings_panel.model_box.currentText() == str(folder / "qwen-Q8_0.gguf")


def test_a_folder_with_one_gguf_or_a_config_is_taken_as_it_is(qtbot, tiny_window, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(QInputDialog, "getItem", lambda *args: asked.append(args) or ("", False))
    one = _folder_with(tmp_path, "model.gguf")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(one))
    _browse_and_wait_for_the_refusal(qtbot, tiny_window)
    assert tiny_window.chat_panel.settings_panel.model_box.currentText() == str(one) and not asked
    (one / "config.json").write_text("{}")
    (one / "other.gguf").write_bytes(b"GGUF")  # a transformers folder: its own weights, not the GGUFs beside them
    _browse_and_wait_for_the_refusal(qtbot, tiny_window)
    assert tiny_window.chat_panel.settings_panel.model_box.currentText() == str(one) and not asked


def test_cancelling_the_choice_keeps_the_folder(tiny_window, tmp_path, monkeypatch):
    folder = _folder_with(tmp_path, "a.gguf", "b.gguf")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(folder))
    monkeypatch.setattr(QInputDialog, "getItem", lambda *args: ("a.gguf", False))
    tiny_window.chat_panel.settings_panel.browse_button.click()
    assert tiny_window.chat_panel.settings_panel.model_box.currentText() == str(folder)
    assert not tiny_window.models.loading  # a cancelled pick loads nothing
