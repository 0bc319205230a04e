"""Against real llama.cpp servers on 127.0.0.1 with the embedded GGUF: llama.cpp's own llama-server
(built once per CPU by tools/llama_cpp_builds.py, as `make test` does) and llama-cpp-python's Python server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from core.errors import ModelLoadError
from core.model.source import embedded_gguf_path
from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from tools.llama_cpp_server import LLAMA_SERVER, PYTHON_SERVER, LlamaCppServer, free_loopback_port

pytestmark = [pytest.mark.model, pytest.mark.llama_cpp, pytest.mark.subprocess]
PROMPT = [("user", "Write two sentences about the sea.")]
KINDS = {LLAMA_SERVER: "llama.cpp", PYTHON_SERVER: "llama-cpp-python"}  # launcher kind: how connect() names it
# What each server logs when a client goes mid-reply and it drops the request.
CANCEL_LINES = {LLAMA_SERVER: "cancel task", PYTHON_SERVER: "Disconnected from client"}


@pytest.fixture(scope="module", params=[LLAMA_SERVER, PYTHON_SERVER])
def llama_server(request):
    with LlamaCppServer(embedded_gguf_path(), threads=2, kind=request.param) as server:
        yield server


def _reply(server, streaming=True, max_new_tokens=24, **kwargs) -> RemoteReply:
    return RemoteReply(
        connect(server.url),
        "",
        PROMPT,
        GenerationSettings(max_new_tokens=max_new_tokens),
        streaming=streaming,
        **kwargs,
    )


def test_streamed_and_whole_replies_agree_and_count_the_servers_tokens(llama_server):
    streamed = _reply(llama_server).run_to_end()
    whole = _reply(llama_server, streaming=False).run_to_end()
    assert streamed.error is None and whole.error is None
    assert streamed.text == whole.text and streamed.text.strip()
    assert streamed.server.kind == KINDS[llama_server.kind]
    # The whole response carries usage; the stream's count (usage where sent, else its chunks) must equal it.
    assert whole.server.output_tokens == whole.output_tokens
    assert streamed.output_tokens == whole.server.output_tokens
    assert whole.prompt_tokens > 0 and whole.chunks == 1
    streamed_metrics = streamed.metrics()
    assert streamed.first_byte_ns <= streamed.timestamps_ns[0]
    assert streamed_metrics.tpot_s > 0 and len(streamed_metrics.itl_s) == streamed.chunks - 1


def test_ask_json_against_the_server_reports_chunks_ttfb_and_the_server(llama_server):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "ask",
            "Hi",
            "--model",
            llama_server.url,
            "--json",
            "--max-new-tokens",
            "12",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["server_kind"] == KINDS[llama_server.kind] and report["served_model"] == "embedded"
    assert report["output_tokens"] >= 2 and report["chunks"] >= 2
    assert 0 < report["ttfb_s"] <= report["ttft_s"] <= report["e2e_s"]
    assert report["tpot_s"] == pytest.approx((report["e2e_s"] - report["ttft_s"]) / (report["output_tokens"] - 1))
    if llama_server.kind == LLAMA_SERVER:
        timings = report["server"]["timings"]
        assert timings["source"] == "llama.cpp timings" and timings["generated_n"] == report["output_tokens"]
        assert report["server"]["client_vs_server"]["ttft_minus_prompt_s"] >= 0


def test_client_timings_stand_beside_the_servers_own(llama_server):
    """TTFT on the client covers the server's prompt pass; the client's TPOT is the server's step plus the wire."""
    mark = len(llama_server.lines)
    trace = _reply(llama_server, max_new_tokens=48, ignore_eos=True).run_to_end()
    assert trace.error is None and trace.output_tokens == 48
    metrics = trace.metrics()
    if llama_server.kind == LLAMA_SERVER:
        timings = trace.server.timings
        assert timings["generated_n"] == 48
        assert metrics.ttft_s >= timings["prompt_ms"] / 1e3
        server_per_token_s = timings["per_token_ms"] / 1e3
        assert [fraction for _, fraction in trace.prefill_progress][-1] == 1.0  # return_progress was streamed
    else:
        # llama-cpp-python sends no timings, but llama.cpp logs its own per request: eval time / runs.
        nxt = _reply(llama_server, max_new_tokens=2).run_to_end()  # its request flushes the log of the one before
        assert nxt.error is None
        logged = [
            re.search(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs", line)
            for line in llama_server.log_since(mark)
            if "prompt eval" not in line
        ]
        ms, runs = next((float(m.group(1)), int(m.group(2))) for m in logged if m)
        assert runs == 47  # the server's decode steps after the first token: ours counted the same reply
        server_per_token_s = ms / runs / 1e3
    assert 0.7 * server_per_token_s <= metrics.tpot_s <= 2.0 * server_per_token_s


def test_stop_mid_reply_ends_the_servers_generation_and_the_next_reply_works(llama_server):
    mark = len(llama_server.lines)
    reply = _reply(llama_server, max_new_tokens=400).start()
    for event in reply:
        if getattr(event, "index", None) == 3:
            reply.stop()
    assert reply.join(30)
    assert reply.trace.stop_reason == "stopped" and reply.trace.error is None
    assert 4 <= reply.trace.output_tokens < 400
    nxt = _reply(llama_server, max_new_tokens=4).run_to_end()
    assert nxt.error is None and nxt.output_tokens >= 1
    # The server's own log says it dropped the request when the client went.
    assert any(CANCEL_LINES[llama_server.kind] in line for line in llama_server.log_since(mark))
    if llama_server.kind == LLAMA_SERVER:
        released = [
            int(m.group(1))
            for m in (re.search(r"stop processing: n_tokens = (\d+)", line) for line in llama_server.log_since(mark))
            if m
        ]
        assert released and released[0] < 100  # prompt and a few tokens, far short of 400


def test_a_wrong_model_name_lists_what_the_server_serves(llama_server):
    with pytest.raises(ModelLoadError, match="does not serve a model named 'nope'; it serves: embedded"):
        connect(llama_server.url + "#model=nope")


def test_a_wrong_port_is_refused_in_one_line():
    with pytest.raises(ModelLoadError, match="connection was refused"):
        connect(f"http://127.0.0.1:{free_loopback_port()}/v1", timeout_s=5)


@pytest.mark.parametrize("kind", [LLAMA_SERVER, PYTHON_SERVER])
def test_a_server_killed_mid_stream_leaves_the_partial_reply_marked_interrupted(kind):
    with LlamaCppServer(embedded_gguf_path(), threads=1, kind=kind) as server:
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

    config = LabConfig(
        sweeps=("prompt", "batch"),
        prompt_words=(5, 200),
        new_tokens=6,
        repeats=1,
        batch_sizes=(1, 2),
        model=llama_server.url,
    )
    results = run_lab(config)
    assert results.error is None, results.error
    short, long = results.prompt
    assert long["prompt_tokens"] > short["prompt_tokens"] > 0
    assert all(row["ttft_s"] > 0 and row["tpot_s"] > 0 and row["new_tokens"] == 6 for row in results.prompt)
    assert [row["concurrency"] for row in results.batch] == [1, 2]
    assert all(row["aggregate_tok_s"] > 0 for row in results.batch)


def test_a_chat_through_the_server_shows_what_its_prompt_cache_reused(llama_server):
    """llama-server reports timings.cache_n; llama-cpp-python's server reports no count: "not reported"."""
    model = connect(llama_server.url)
    messages = list(PROMPT)
    traces = []
    for follow_up in ("And one more sentence, please.", "Thank you. Name the ocean you wrote about."):
        trace = RemoteReply(model, "", messages, GenerationSettings(max_new_tokens=12)).run_to_end()
        traces.append(trace)
        messages += [("assistant", trace.text), ("user", follow_up)]
    second = traces[1]
    if llama_server.kind == LLAMA_SERVER:
        assert second.cache_source == "llama.cpp timings.cache_n"
        assert traces[0].prompt_tokens <= second.cached_tokens < second.prompt_tokens
        assert second.prefilled_tokens == second.server.timings["prompt_n"]
    else:
        assert second.cached_tokens is None and second.cache_reason.startswith("not reported")
