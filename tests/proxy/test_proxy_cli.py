"""`latencylab proxy` as a user runs it: a child process, a client through it, lines on stdout and a JSONL file."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import httpx
import pytest

from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

SECRETS = ("sk-cli-secret-1234", "x-key-secret-5678")
USAGE = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}


@pytest.mark.subprocess
def test_the_command_meters_requests_into_lines_and_jsonl_and_never_writes_a_key(tmp_path):
    log = tmp_path / "traffic.jsonl"
    script = Script(chunks=[openai_chunk("Hi"), openai_chunk(" there"), USAGE, "[DONE]"])
    with ScriptedServer(script) as server:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "proxy", "--upstream", server.url, "--port", "0", "--jsonl", str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        try:
            banner = process.stderr.readline()
            match = re.search(r"latencylab proxy: (http://127\.0\.0\.1:\d+) -> ", banner)
            assert match, banner + process.stderr.read()
            url = match.group(1)
            headers = {"Authorization": f"Bearer {SECRETS[0]}", "x-api-key": SECRETS[1], "User-Agent": "my-agent/2"}
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a private prompt"}]}
            streamed = httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers)
            models = httpx.get(f"{url}/v1/models", headers=headers)
        finally:
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert streamed.status_code == 200 and "Hi" in streamed.text and models.status_code == 200
    assert [request["headers"]["Authorization"] for request in server.requests] == [f"Bearer {SECRETS[0]}"] * 2
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [record["path"] for record in records] == ["/v1/chat/completions", "/v1/models"]
    chat = records[0]
    assert chat["output_tokens"] == 2 and chat["prompt_tokens"] == 7 and chat["user_agent"] == "my-agent/2"
    assert chat["ttft_s"] > 0 and chat["client_pid"] in (os.getpid(), None)
    lines = out.splitlines()
    assert len(lines) == 2 and "POST /v1/chat/completions 200" in lines[0] and "7 → 2 tokens" in lines[0]
    everything = log.read_text() + out + err
    assert not any(secret in everything for secret in SECRETS)
    assert "a private prompt" not in everything and "Hi there" not in everything


def test_an_upstream_that_is_no_url_is_refused_in_one_line(run_cli):
    result = run_cli("proxy", "--upstream", "localhost:11434", timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "latencylab proxy: error: --upstream: the server's address 'localhost:11434' will not do: it needs http:// or "
        "https:// and a host (an address reads like http://127.0.0.1:11434 for Ollama, or http://127.0.0.1:8080/v1)"
    )


def test_an_address_beyond_loopback_is_warned_of(run_cli):
    """192.0.2.1 (TEST-NET-1) is no address of this machine: the warning comes, then the bind fails in words."""
    result = run_cli("proxy", "--upstream", "http://127.0.0.1:9", "--host", "192.0.2.1", "--port", "0", timeout=60)
    assert result.returncode == 1
    assert "warning: listening on 192.0.2.1, so other machines can reach it" in result.stderr
    assert "latencylab proxy: error: could not listen on 192.0.2.1:0" in result.stderr
