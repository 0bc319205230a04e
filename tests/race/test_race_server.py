"""The local model against llama.cpp's own llama-server on 127.0.0.1 (the same GGUF): each alone, and live."""

from __future__ import annotations

import json

import pytest

from core.backend.choice import load_any
from core.model.source import embedded_gguf_path
from core.race.config import RaceConfig
from core.race.document import race_json
from core.race.runner import run_race
from core.race.sides import parse_side
from tools.llama_cpp_server import LLAMA_SERVER, LlamaCppServer

PROMPT = "Name three colours of the rainbow."


@pytest.fixture(scope="module")
def llama_server():
    with LlamaCppServer(embedded_gguf_path(), threads=2, kind=LLAMA_SERVER) as server:
        yield server


@pytest.mark.parametrize("live", [False, True], ids=["each-alone", "live"])
def test_the_local_model_against_llama_server(native_model, llama_server, live):
    def load(side):
        return load_any(side.model) if side.remote else native_model

    config = RaceConfig(
        PROMPT,
        parse_side("A", ["max_new_tokens=8"]),
        parse_side("B", [f"model={llama_server.url}", "max_new_tokens=8"]),
        live=live,
    )
    result = run_race(config, load)
    a, b = result.a.trace, result.b.trace
    assert a.stop_reason in ("eos", "max_tokens") and b.stop_reason in ("eos", "max_tokens"), result.status_line
    assert a.server is None and b.server.kind == "llama.cpp"  # the server's own report rides with B
    assert result.labels[1].startswith("server 127.0.0.1:")
    if live:  # one Send for both: the same clock zero
        assert a.request_start_ns == b.request_start_ns
    else:  # B was sent only once A had finished
        assert b.request_start_ns > a.timestamps_ns[-1]
    verdict = result.verdict()
    assert verdict.b.ttft_s == b.metrics().ttft_s and verdict.a.e2e_s == a.metrics().e2e_s
    document = json.loads(race_json(result))
    assert document["mode"] == ("live" if live else "each alone")
    assert document["b"]["server"]["kind"] == "llama.cpp"
    assert ("share the CPU" in document["mode_words"]) is live
