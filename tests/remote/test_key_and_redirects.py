"""The API key never shows: not in an error body that echoes it, not after a redirect, which is not followed."""

from __future__ import annotations

import pytest

from core.errors import ModelLoadError
from core.remote.connect import connect
from core.remote.errors import HIDDEN_KEY, redact
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

KEY = "sk-live-0123456789abcdefSECRET"
ECHOES = {  # error bodies as careless proxies write them
    "the header in the message": {"error": {"message": f"bad token in header Authorization: Bearer {KEY}"}},
    "the request's headers": {"detail": f"headers={{'Authorization': 'Bearer {KEY}', 'User-Agent': 'x'}}"},
    "the key cut off where the message is shortened": {"error": {"message": "y" * 280 + f" Bearer {KEY}"}},
}


@pytest.mark.parametrize("echo", list(ECHOES))
@pytest.mark.parametrize("status", [401, 500])
def test_an_error_body_that_echoes_the_key_never_shows_it(echo, status):
    with ScriptedServer(Script(status=status, error_body=ECHOES[echo])) as server:
        # Connecting (GET /models) answers normally; the chat request gets the echo.
        model = connect(server.url, api_key=KEY, timeout_s=10.0)
        trace = RemoteReply(model, "", [("user", "Hi")], GenerationSettings(max_new_tokens=4)).run_to_end()
    assert trace.error and "SECRET" not in trace.error and KEY[:10] not in trace.error
    assert HIDDEN_KEY in trace.error


def test_the_cli_prints_no_key_on_stderr(run_cli):
    with ScriptedServer(Script(status=500, error_body=ECHOES["the request's headers"])) as server:
        result = run_cli("ask", "Hi", "--model", server.url, "--max-new-tokens", "4", env={"LATENCYLAB_API_KEY": KEY})
    assert result.returncode == 1 and "Bearer" in result.stderr, result.stderr
    assert "SECRET" not in result.stderr + result.stdout and HIDDEN_KEY in result.stderr


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"a {KEY} b", f"a {HIDDEN_KEY} b"),
        (f"{KEY}{KEY}", HIDDEN_KEY * 2),
        (f"cut: {KEY[:12]}…", f"cut: {HIDDEN_KEY}…"),
        ("no key here", "no key here"),
    ],
)
def test_redact(text, expected):
    assert redact(text, KEY) == expected


def test_a_redirect_to_another_host_is_named_and_the_key_is_not_sent_there():
    """Was: "…/models with something that is not JSON: ''"."""
    with ScriptedServer(Script(chunks=[openai_chunk("x"), "[DONE]"])) as elsewhere:
        target = f"http://localhost:{elsewhere.port}"  # another host name for the same machine
        with ScriptedServer(Script(redirect_to=target)) as server:
            with pytest.raises(ModelLoadError) as refused:
                connect(server.url, api_key=KEY, timeout_s=10.0)
            assert server.requests and server.requests[0]["headers"].get("Authorization") == f"Bearer {KEY}"
        message = str(refused.value)
        assert f"redirected the request to {target}/v1/models (HTTP 302)" in message
        assert "does not follow redirects, so nothing was sent there, the API key included" in message
        assert elsewhere.requests == []  # nothing reached the other host, the key least of all
