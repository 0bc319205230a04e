"""What a server says of its prompt cache, read from each wire format; where it says nothing, "not reported"."""

from __future__ import annotations

import pytest

from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

SETTINGS = GenerationSettings(max_new_tokens=8)
END = [openai_chunk("Hi"), openai_chunk(finish="stop")]


def openai_trace(last: dict, **script):
    with ScriptedServer(Script(chunks=END + [last, "[DONE]"], **script)) as server:
        return RemoteReply(connect(server.url), "", [("user", "Hi")], SETTINGS).run_to_end()


def test_openai_usage_cached_tokens_vllm_style():
    trace = openai_trace(
        {
            "choices": [],
            "usage": {"prompt_tokens": 465, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 440}},
        }
    )
    assert (trace.prompt_tokens, trace.cached_tokens, trace.prefilled_tokens) == (465, 440, 25)
    assert trace.cache_source == "usage.prompt_tokens_details.cached_tokens"
    assert "reused 440 cached prompt tokens" in trace.cache_reason


def test_llama_cpp_timings_cache_n():
    trace = openai_trace(
        {
            "choices": [],
            "usage": {"prompt_tokens": 109, "completion_tokens": 2},
            "timings": {"prompt_n": 29, "cache_n": 80, "prompt_ms": 100.0, "predicted_n": 2},
        }
    )
    assert (trace.cached_tokens, trace.prefilled_tokens, trace.cache_source) == (80, 29, "llama.cpp timings.cache_n")


def test_a_server_that_reports_nothing_is_not_reported_never_inferred():
    trace = openai_trace({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 2}})
    assert trace.cached_tokens is None and trace.prefilled_tokens is None
    assert trace.cache_reason.startswith("not reported:")


def test_a_cached_count_beyond_the_prompt_is_the_servers_claim_not_a_fact():
    trace = openai_trace(
        {
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 10**9}},
        }
    )
    assert trace.cached_tokens is None and "claimed 1,000,000,000 cached tokens" in trace.cache_reason


@pytest.mark.parametrize(
    "done, cached",
    [
        ({"prompt_eval_count": 465, "prompt_eval_cached_count": 440}, 440),
        ({"prompt_eval_count": 25}, None),  # an Ollama before 0.30: no count of its cache, so nothing is inferred
    ],
)
def test_ollama_prompt_eval_cached_count(done, cached):
    lines = [
        {"message": {"role": "assistant", "content": "Hi"}, "done": False},
        {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop", "eval_count": 1, **done},
    ]
    with ScriptedServer(Script(chunks=lines, ollama=True, models=("smollm2:135m",))) as server:
        trace = RemoteReply(connect(server.root), "", [("user", "Hi")], SETTINGS).run_to_end()
    assert trace.cached_tokens == cached
    assert (trace.cache_source == "Ollama prompt_eval_cached_count") == (cached is not None)
