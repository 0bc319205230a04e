"""Against the real llama.cpp server (llama-cpp-python[server]) on 127.0.0.1 with the embedded GGUF."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from core.errors import ModelLoadError
from core.model.source import embedded_gguf_path
from core.remote.connect import connect
from core.remote.llama_cpp_server import LlamaCppServer, free_loopback_port
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings

pytestmark = [pytest.mark.model, pytest.mark.llama_server]
PROMPT = [("user", "Write two sentences about the sea.")]


@pytest.fixture(scope="module")
def llama_server():
    with LlamaCppServer(embedded_gguf_path(), threads=2) as server:
        yield server


def _reply(server, streaming=True, max_new_tokens=24, **kwargs) -> RemoteReply:
    return RemoteReply(connect(server.url), "", PROMPT, GenerationSettings(max_new_tokens=max_new_tokens),
                       streaming=streaming, **kwargs)


def test_streamed_and_whole_replies_agree_and_count_the_servers_tokens(llama_server):
    streamed = _reply(llama_server).run_to_end()
    whole = _reply(llama_server, streaming=False).run_to_end()
    assert streamed.error is None and whole.error is None
    assert streamed.text == whole.text and streamed.text.strip()
    # The whole response carries usage; the stream, whose chunks this server sends one per token, must add up to it.
    assert whole.server["output_tokens"] == whole.output_tokens
    assert streamed.output_tokens == whole.server["output_tokens"]
    assert whole.prompt_tokens > 0 and whole.chunks == 1
    streamed_metrics = streamed.metrics()
    assert streamed.first_byte_ns - streamed.request_start_ns <= streamed.timestamps_ns[0] - streamed.request_start_ns
    assert streamed_metrics.tpot_s > 0 and len(streamed_metrics.itl_s) == streamed.chunks - 1


def test_ask_json_against_the_server_reports_chunks_ttfb_and_the_server(llama_server):
    result = subprocess.run([sys.executable, "-m", "cli.main", "ask", "Hi", "--model", llama_server.url, "--json",
                             "--max-new-tokens", "12"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["server_kind"] == "llama-cpp-python" and report["served_model"] == "embedded"
    assert report["output_tokens"] >= 2 and report["chunks"] >= 2
    assert 0 < report["ttfb_s"] <= report["ttft_s"] <= report["e2e_s"]
    assert report["server"]["kind"] == "llama-cpp-python"
    assert report["tpot_s"] == pytest.approx((report["e2e_s"] - report["ttft_s"]) / (report["output_tokens"] - 1))


def test_stop_mid_reply_ends_the_servers_generation_and_the_next_reply_works(llama_server):
    mark = len(llama_server.lines)
    reply = _reply(llama_server, max_new_tokens=400).start()
    for event in reply:
        if getattr(event, "index", None) == 3:
            reply.stop()
    assert reply.join(30)
    assert reply.trace.stop_reason == "stopped" and reply.trace.error is None
    assert 4 <= reply.trace.output_tokens < 400
    # The server's own log says it dropped the request when the client went (llama-cpp-python's wording).
    nxt = _reply(llama_server, max_new_tokens=4).run_to_end()
    assert nxt.error is None and nxt.output_tokens >= 1
    assert any("Disconnected from client" in line for line in llama_server.log_since(mark))


def test_a_wrong_model_name_lists_what_the_server_serves(llama_server):
    with pytest.raises(ModelLoadError, match="does not serve a model named 'nope'; it serves: embedded"):
        connect(llama_server.url + "#model=nope")


def test_a_wrong_port_is_refused_in_one_line():
    with pytest.raises(ModelLoadError, match="connection was refused"):
        connect(f"http://127.0.0.1:{free_loopback_port()}/v1", timeout_s=5)


def test_a_server_killed_mid_stream_leaves_the_partial_reply_marked_interrupted():
    with LlamaCppServer(embedded_gguf_path(), threads=1) as server:
        reply = _reply(server, max_new_tokens=400).start()
        for event in reply:
            if getattr(event, "index", None) == 2:
                os.kill(server.process.pid, signal.SIGKILL)
        assert reply.join(30)
    trace = reply.trace
    assert trace.output_tokens >= 3 and trace.text
    assert trace.stop_reason == "error" and trace.error.startswith("interrupted")


def test_the_lab_sweeps_prompts_and_concurrency_on_the_server(llama_server):
    from core.lab.config import LabConfig
    from core.lab.runner import run_lab

    config = LabConfig(sweeps=("prompt", "batch"), prompt_words=(5, 200), new_tokens=6, repeats=1,
                       batch_sizes=(1, 2), model=llama_server.url)
    results = run_lab(config)
    assert results.error is None, results.error
    short, long = results.prompt
    assert long["prompt_tokens"] > short["prompt_tokens"] > 0
    assert all(row["ttft_s"] > 0 and row["tpot_s"] > 0 for row in results.prompt)
    assert [row["concurrency"] for row in results.batch] == [1, 2]
    assert all(row["aggregate_tok_s"] > 0 for row in results.batch)


def test_client_tpot_agrees_with_the_servers_own_time_per_token(llama_server):
    """llama-cpp-python sends no timings, but llama.cpp logs its own per request: eval time / runs."""
    import re

    mark = len(llama_server.lines)
    trace = _reply(llama_server, max_new_tokens=48, ignore_eos=True).run_to_end()
    assert trace.error is None and trace.output_tokens == 48
    nxt = _reply(llama_server, max_new_tokens=2).run_to_end()  # its request flushes the log of the one before
    assert nxt.error is None
    logged = [re.search(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs", line) for line in llama_server.log_since(mark)
              if "prompt eval" not in line]
    ms, runs = next((float(m.group(1)), int(m.group(2))) for m in logged if m)
    assert runs == 47  # the server's decode steps after the first token: ours counted the same reply
    server_per_token_s = ms / runs / 1e3
    # The client's TPOT holds the server's step plus network and parsing: close above it, never far below.
    assert 0.8 * server_per_token_s <= trace.metrics().tpot_s <= 2.0 * server_per_token_s
