"""Bad GGUF files get one clear line each, never a traceback, and the model already loaded stays loaded."""

from __future__ import annotations

import select

import pytest
from tiny_gguf import write_tiny_llama

from core.errors import ModelLoadError
from core.generation.local_model import LocalModel
from core.model.loader import load_model


def _unknown_type(path, good):
    """The good file with one tensor's quant type id set to 99, which no GGML version defines."""
    data = bytearray(good.read_bytes())
    name = b"blk.0.attn_q.weight"
    at = data.index(name) + len(name)
    dims = int.from_bytes(data[at : at + 4], "little")
    type_at = at + 4 + 8 * dims
    data[type_at : type_at + 4] = (99).to_bytes(4, "little")
    path.write_bytes(bytes(data))


BAD_FILES = {
    "not_a_gguf": (lambda path, good: path.write_text("hello, I am a text file"), "not a readable GGUF"),
    "truncated": (lambda path, good: path.write_bytes(good.read_bytes()[: good.stat().st_size * 7 // 10]), "truncated"),
    "unsupported_architecture": (
        lambda path, good: write_tiny_llama(path, architecture="bert"),
        "'bert' model, an architecture Latency Lab cannot run",
    ),
    "unknown_quant_type": (_unknown_type, "quant type this app does not know (type id 99)"),
    "tokenizer_cannot_build": (
        lambda path, good: write_tiny_llama(path, tokenizer_model="nonsense"),
        "tokenizer cannot be built",
    ),
}


@pytest.fixture(scope="module")
def good_file(tmp_path_factory):
    return write_tiny_llama(tmp_path_factory.mktemp("good") / "good.gguf")


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, good_file):
    folder = tmp_path_factory.mktemp("bad")
    made = {}
    for name, (make, _) in BAD_FILES.items():
        made[name] = folder / f"{name}.gguf"
        make(made[name], good_file)
    return made


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_file_is_refused_in_one_line_naming_why(bad_files, name):
    with pytest.raises(ModelLoadError) as refused:
        load_model(str(bad_files[name]))  # native precision, the default
    message = str(refused.value)
    assert BAD_FILES[name][1] in message and "\n" not in message


@pytest.mark.parametrize("name", ["truncated", "unknown_quant_type", "unsupported_architecture"])
def test_the_cli_answers_a_bad_file_in_one_line_without_a_traceback(bad_files, name, run_cli):
    result = run_cli("ask", "Hi", "--model", str(bad_files[name]), "--json")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and BAD_FILES[name][1] in result.stderr


def test_the_model_already_loaded_stays_loaded_after_a_bad_file(bad_files, good_file):
    from core.engine.in_process import InProcessEngine
    from core.engine.messages import LoadModel, ModelFailed

    engine = InProcessEngine()
    try:
        before = LocalModel.of(load_model(str(good_file)))
        engine.adopt(before)
        engine.take_events()
        engine.send(LoadModel(str(bad_files["truncated"]), "native"))
        failures = []
        while not failures and select.select([engine.fileno()], [], [], 120)[0]:
            failures = [d.event for d in engine.take_events() if isinstance(d.event, ModelFailed)]
        assert failures and "truncated" in failures[0].message
        assert engine.core.loaded is before
    finally:
        engine.close()
