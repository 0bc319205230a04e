"""A server's queue induced for real: llama-server with one slot, a second request sent while the first generates.
Its wait for a first token is the server's queue, not its prefill, and the diagnosis says so from the server's own
timings; the first request, alone at its start, gets no such finding."""

from __future__ import annotations

import threading

import pytest

from core.diagnosis.diagnose import diagnose
from core.model.source import embedded_gguf_path
from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from core.timing.events import TokenEvent
from tools.llama_cpp_server import LLAMA_SERVER, LlamaCppServer

pytestmark = [pytest.mark.model, pytest.mark.llama_cpp, pytest.mark.subprocess]
PROMPT = [("user", "Write a long story about the sea.")]


def reply(url: str, tokens: int) -> RemoteReply:
    return RemoteReply(connect(url), "", PROMPT, GenerationSettings(max_new_tokens=tokens))


def test_a_request_queued_behind_another_is_found_waiting_outside_its_prefill(llama_cpp):
    with LlamaCppServer(embedded_gguf_path(), threads=2, kind=LLAMA_SERVER, extra_args=("--parallel", "1")) as server:
        reply(server.url, 2).run_to_end()  # warm: the model read, the first request's costs paid
        first_token = threading.Event()
        traces = {}

        def long_reply() -> None:
            traces["first"] = reply(server.url, 96).run_to_end(
                lambda event: first_token.set() if isinstance(event, TokenEvent) else None
            )

        generating = threading.Thread(target=long_reply)
        generating.start()
        try:
            assert first_token.wait(timeout=120)
            queued = reply(server.url, 4).run_to_end()  # waits for the only slot
        finally:
            generating.join(timeout=300)
    first = traces["first"]
    assert first.error is None and queued.error is None
    prompt_ms = queued.server.timings["prompt_ms"]
    assert queued.metrics().ttft_s > 2 * prompt_ms / 1e3  # the cause is there: most of the wait was not prefill
    finding = next(finding for finding in diagnose(queued) if finding.kind == "server_wait")
    assert finding.summary.startswith("Of the ")
    assert "the server reports" in finding.summary and "its queue, the network or templating" in finding.summary
    assert "server_wait" not in [finding.kind for finding in diagnose(first)]
