"""A remote reply against the scripted server: chunks are not tokens, TTFT skips empty chunks, faults keep the text."""

from __future__ import annotations

import pytest

from core.errors import ModelLoadError
from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

SETTINGS = GenerationSettings(max_new_tokens=50)


def _reply(server: ScriptedServer, streaming: bool = True, **kwargs) -> RemoteReply:
    model = connect(server.url, timeout_s=kwargs.pop("timeout_s", 10.0))
    return RemoteReply(model, "Be brief.", [("user", "Hi")], SETTINGS, streaming=streaming, **kwargs)


def test_role_only_and_empty_chunks_are_not_the_first_token_and_usage_counts_the_tokens():
    chunks = [
        openai_chunk(role="assistant"),
        openai_chunk(""),
        openai_chunk("Hello"),
        openai_chunk(" there"),
        openai_chunk(finish="stop"),
        {"id": "u", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}},
        "[DONE]",
    ]
    with ScriptedServer(Script(chunks=chunks)) as server:
        trace = _reply(server).run_to_end()
    assert trace.text == "Hello there"
    assert trace.chunks == 2
    assert trace.output_tokens == 5  # the server's usage, not the two content chunks
    assert trace.prompt_tokens == 7
    assert trace.stop_reason == "eos" and trace.error is None
    metrics = trace.metrics()
    assert len(metrics.itl_s) == 1  # one gap between two chunks
    assert metrics.ttft_s > 0 and metrics.e2e_s >= metrics.ttft_s
    assert metrics.tpot_s == pytest.approx((metrics.e2e_s - metrics.ttft_s) / 4)
    assert trace.first_byte_ns is not None and trace.first_byte_ns <= trace.timestamps_ns[0]


def test_a_chunk_of_several_tokens_spreads_them_at_its_arrival_and_counts_as_one_gap():
    chunks = [
        openai_chunk("one two three", tokens=3),
        openai_chunk(" four", tokens=1),
        openai_chunk(finish="stop"),
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
        "[DONE]",
    ]
    with ScriptedServer(Script(chunks=chunks)) as server:
        trace = _reply(server).run_to_end()
    assert trace.output_tokens == 4
    assert len(trace.timestamps_ns) == 4
    assert trace.chunk_of == [0, 0, 0, 1]
    assert len(set(trace.timestamps_ns[:3])) == 1  # spread at the chunk's one arrival stamp
    assert len(trace.metrics().itl_s) == 1


def test_reasoning_counts_toward_ttft_and_is_kept_apart_from_the_answer():
    chunks = [openai_chunk(reasoning="Let me think."), openai_chunk("42"), openai_chunk(finish="stop"), "[DONE]"]
    with ScriptedServer(Script(chunks=chunks)) as server:
        trace = _reply(server).run_to_end()
    assert trace.text == "42"
    assert trace.reasoning_text == "Let me think."
    assert trace.reasoning_indices == [0]
    assert trace.metrics().ttft_s == pytest.approx((trace.timestamps_ns[0] - trace.request_start_ns) / 1e9)


def test_the_request_asks_for_usage_and_sends_the_chat_and_settings():
    with ScriptedServer(Script(chunks=[openai_chunk("x"), openai_chunk(finish="length"), "[DONE]"])) as server:
        trace = _reply(server).run_to_end()
        body = server.requests[-1]["body"]
    assert trace.stop_reason == "max_tokens"
    assert body["stream"] is True and body["stream_options"]["include_usage"] is True
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert body["max_tokens"] == 50 and body["model"] == "scripted-model"


def test_streaming_off_is_one_response_whose_tokens_all_arrive_at_once():
    whole = {
        "choices": [{"message": {"role": "assistant", "content": "All at once."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
    }
    with ScriptedServer(Script(whole=whole)) as server:
        trace = _reply(server, streaming=False).run_to_end()
        assert server.requests[-1]["body"]["stream"] is False
    assert trace.text == "All at once."
    assert trace.output_tokens == 4 and trace.chunks == 1
    metrics = trace.metrics()
    assert metrics.ttft_s == metrics.e2e_s


def test_a_stream_cut_mid_reply_keeps_the_text_and_says_interrupted():
    chunks = [openai_chunk("kept"), openai_chunk(" too"), openai_chunk(" lost")]
    with ScriptedServer(Script(chunks=chunks, cut_after=2)) as server:
        trace = _reply(server).run_to_end()
    assert trace.text == "kept too"
    assert trace.stop_reason == "error"
    assert trace.error.startswith("interrupted:")


def test_malformed_sse_is_a_clear_error_and_keeps_what_came_before():
    chunks = [openai_chunk("fine"), "{not json"]
    with ScriptedServer(Script(chunks=chunks)) as server:
        trace = _reply(server).run_to_end()
    assert trace.text == "fine"
    assert "not JSON" in trace.error


def test_a_server_that_stalls_hits_the_users_timeout():
    with ScriptedServer(Script(chunks=[openai_chunk("a"), openai_chunk("b")], stall_after=1)) as server:
        trace = _reply(server, timeout_s=1.0).run_to_end()
    assert trace.text == "a"
    assert "sent nothing for 1 s" in trace.error


def test_stop_closes_the_stream_at_once_and_the_server_sees_the_client_go():
    with ScriptedServer(Script(chunks=[openai_chunk("a"), openai_chunk("b")], stall_after=1)) as server:
        reply = _reply(server).start()
        for event in reply:
            if getattr(event, "text", None) == "a":
                reply.stop()
        assert reply.join(5)
    assert reply.trace.stop_reason == "stopped"
    assert reply.trace.error is None and reply.trace.text == "a"


@pytest.mark.parametrize(
    "status, words",
    [
        (401, "check the API key"),
        (403, "check the API key"),
        (404, "check the base URL"),
        (429, "rate-limiting"),
        (500, "server error"),
        (503, "server error"),
    ],
)
def test_http_errors_say_what_to_check(status, words):
    with ScriptedServer(Script(status=status)) as server:
        trace = _reply(server).run_to_end()
    assert words in trace.error
    assert trace.output_tokens == 0


def test_the_api_key_goes_in_the_header_and_nowhere_in_what_is_kept(monkeypatch):
    monkeypatch.setenv("LATENCYLAB_API_KEY", "sk-secret-123")
    with ScriptedServer(Script(chunks=[openai_chunk("x"), openai_chunk(finish="stop"), "[DONE]"])) as server:
        model = connect(server.url)
        RemoteReply(model, "", [("user", "Hi")], SETTINGS).run_to_end()
        assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in repr(model) and "sk-secret-123" not in str(model.describe())


def test_a_model_the_server_does_not_serve_is_refused_with_what_it_serves():
    with ScriptedServer(Script(models=("a", "b"))) as server:
        with pytest.raises(ModelLoadError, match="does not serve a model named 'c'; it serves: a, b"):
            connect(server.url + "#model=c")
        chosen = connect(server.url + "#model=b")
    assert chosen.model == "b"


def test_a_wrong_port_is_a_refused_connection():
    with ScriptedServer() as server:
        port = server.port
    with pytest.raises(ModelLoadError, match="connection was refused"):
        connect(f"http://127.0.0.1:{port}/v1", timeout_s=5)


def test_ollama_native_reports_its_durations():
    lines = [
        {"message": {"role": "assistant", "content": "Hi"}, "done": False},
        {"message": {"role": "assistant", "content": "!"}, "done": False},
        {
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 12,
            "prompt_eval_duration": 30_000_000,
            "eval_count": 2,
            "eval_duration": 40_000_000,
            "load_duration": 5_000_000,
            "total_duration": 80_000_000,
        },
    ]
    with ScriptedServer(Script(chunks=lines, ollama=True, models=("smollm2:135m",))) as server:
        model = connect(server.root)
        assert model.protocol == "ollama" and model.server_kind == "Ollama"
        trace = RemoteReply(model, "", [("user", "Hi")], SETTINGS).run_to_end()
        assert server.requests[-1]["body"]["options"]["num_predict"] == 50
    assert trace.text == "Hi!"
    assert trace.output_tokens == 2 and trace.prompt_tokens == 12
    timings = trace.server.timings
    assert timings["prompt_ms"] == pytest.approx(30.0)
    assert timings["per_token_ms"] == pytest.approx(20.0)
    assert timings["load_ms"] == pytest.approx(5.0)


def test_llama_cpp_prompt_progress_becomes_prefill_progress_and_its_timings_count_the_tokens():
    chunks = [
        {"choices": [], "prompt_progress": {"total": 100, "cache": 20, "processed": 60, "time_ms": 5}},
        {"choices": [], "prompt_progress": {"total": 100, "cache": 20, "processed": 100, "time_ms": 9}},
        openai_chunk("Hi"),
        openai_chunk("!"),
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "timings": {
                "prompt_n": 80,
                "prompt_ms": 9.0,
                "predicted_n": 2,
                "predicted_ms": 4.0,
                "predicted_per_token_ms": 2.0,
                "cache_n": 20,
            },
        },
        "[DONE]",
    ]
    with ScriptedServer(Script(chunks=chunks)) as server:
        trace = _reply(server).run_to_end()
    assert [fraction for _, fraction in trace.prefill_progress] == [0.5, 1.0]
    assert trace.output_tokens == 2  # from timings.predicted_n: this stream sent no usage
    assert trace.server.timings["cache_n"] == 20
    assert trace.prompt_tokens == 100 and trace.cached_tokens == 20  # computed 80, and 20 from the server's cache


def test_a_reply_past_the_size_cap_is_cut_there_and_kept(monkeypatch):
    import core.remote.reply

    monkeypatch.setattr(core.remote.reply, "MAX_REPLY_BYTES", 2000)
    chunks = [openai_chunk("x" * 300) for _ in range(20)] + ["[DONE]"]
    with ScriptedServer(Script(chunks=chunks)) as server:
        trace = _reply(server).run_to_end()
    assert trace.text.startswith("x" * 300) and len(trace.text) < 20 * 300
    assert "interrupted" in trace.error and "was cut there" in trace.error


def test_tls_to_a_server_that_does_not_speak_it_is_a_tls_error():
    with ScriptedServer() as server, pytest.raises(ModelLoadError, match="TLS error"):
        connect(f"https://127.0.0.1:{server.port}/v1", timeout_s=5)


def test_plain_http_to_another_host_warns_and_keys_in_urls_are_refused():
    from core.remote.spec import RemoteSpec

    assert RemoteSpec.parse("http://127.0.0.1:8080/v1").plain_http_warning() is None
    assert RemoteSpec.parse("https://gpu.example.com/v1").plain_http_warning() is None
    assert "unencrypted" in RemoteSpec.parse("http://gpu.example.com:8000/v1").plain_http_warning()
    with pytest.raises(ModelLoadError, match="key in its query"):
        RemoteSpec.parse("http://gpu.example.com/v1?api_key=sk-1")
    with pytest.raises(ModelLoadError, match="user name or password"):
        RemoteSpec.parse("http://user:sk-1@gpu.example.com/v1")


def test_the_cli_says_a_bad_server_in_one_line_and_exits_1(run_cli):
    with ScriptedServer(Script(status=401)) as server:
        result = run_cli("ask", "Hi", "--model", server.url, timeout=120)
    assert result.returncode == 1
    assert "check the API key" in result.stderr and "Traceback" not in result.stderr


def test_connection_errors_are_worded_for_the_user():
    import socket
    import ssl

    from core.remote.errors import connection_error

    where = "gpu.example.com:8000"
    assert "could not find the host" in str(
        connection_error(where, socket.gaierror(-2, "Name or service not known"), 5)
    )
    assert "sent nothing for 5 s" in str(connection_error(where, TimeoutError(), 5))
    assert "connection was refused" in str(connection_error(where, ConnectionRefusedError(), 5))
    certificate = ssl.SSLCertVerificationError(1, "certificate verify failed")
    certificate.verify_message = "self-signed certificate"
    worded = str(connection_error(where, certificate, 5))
    assert "TLS error" in worded and "self-signed certificate" in worded and "always verified" in worded


def test_vllm_request_metrics_stand_in_for_server_timings_where_a_deployment_sends_them():
    chunks = [
        openai_chunk("a"),
        openai_chunk(finish="stop"),
        {
            "choices": [],
            "usage": {"prompt_tokens": 4, "completion_tokens": 1},
            "metrics": {"arrival_time": 100.0, "first_scheduled_time": 100.25, "first_token_time": 100.75},
        },
        "[DONE]",
    ]
    with ScriptedServer(Script(chunks=chunks, owned_by="vllm")) as server:
        model = connect(server.url)
        assert model.server_kind == "vLLM"
        trace = RemoteReply(model, "", [("user", "Hi")], SETTINGS).run_to_end()
        stream_options = server.requests[-1]["body"]["stream_options"]
    assert stream_options == {"include_usage": True, "continuous_usage_stats": True}
    assert trace.server.timings["queue_ms"] == pytest.approx(250.0)
    assert trace.server.timings["prompt_ms"] == pytest.approx(500.0)


@pytest.mark.parametrize(
    ("draft", "expected"),
    [({"draft_n": 12, "draft_n_accepted": 9}, (12, 9)), ({}, None), ({"draft_n": 3, "draft_n_accepted": 7}, None)],
)
def test_llama_cpp_draft_counts_become_the_replys_speculation_report_never_inferred(draft, expected):
    chunks = [
        openai_chunk("Hi"),
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "timings": {"prompt_n": 8, "predicted_n": 1, "predicted_ms": 2.0, **draft},
        },
        "[DONE]",
    ]
    with ScriptedServer(Script(chunks=chunks)) as server:
        trace = _reply(server).run_to_end()
    if expected is None:  # none sent, or more accepted than drafted: no report
        assert trace.speculation is None
    else:
        report = trace.speculation
        assert (report.drafted, report.accepted, report.passes, report.method) == (*expected, None, "server")
