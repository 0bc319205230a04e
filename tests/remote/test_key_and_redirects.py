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


# -- a key as it enters ---------------------------------------------------------------------------------------------

# A key file saved with Windows line endings, or a key copied with a space: taken off, the key works.
TRIMMED = {"a trailing CR": KEY + "\r", "CRLF": KEY + "\r\n", "spaces around": f"  {KEY} \t"}
# What no header can carry, each refused in one line that names the kind and position, never the key.
REFUSED = {
    "a CR inside": (KEY[:8] + "\r" + KEY[8:], "a line break (character 9 of 31)"),
    "a LF inside": (KEY[:8] + "\nX-Injected: 1" + KEY[8:], "a line break (character 9 of 44)"),
    "a NUL": (KEY + "\0x", "a control character (character 31 of 32)"),
    "a typographic apostrophe": (KEY[:3] + "’" + KEY[3:], "a character that is not ASCII (character 4 of 31)"),
}


@pytest.mark.parametrize("raw", list(TRIMMED.values()), ids=list(TRIMMED))
def test_whitespace_around_a_key_is_taken_off_where_it_enters(raw, monkeypatch):
    with ScriptedServer(Script(chunks=[openai_chunk("x"), openai_chunk(finish="stop"), "[DONE]"])) as server:
        connect(server.url, api_key=raw, timeout_s=10.0)
        monkeypatch.setenv("LATENCYLAB_API_KEY", raw)
        model = connect(server.url, timeout_s=10.0)
        RemoteReply(model, "", [("user", "Hi")], GenerationSettings(max_new_tokens=4)).run_to_end()
    assert {request["headers"]["Authorization"] for request in server.requests} == {f"Bearer {KEY}"}


@pytest.mark.parametrize("raw, said", list(REFUSED.values()), ids=list(REFUSED))
def test_a_key_no_header_can_carry_is_refused_in_one_line_without_the_key(raw, said, monkeypatch, capsys, qtbot):
    from cli.main import main
    from gui.model.server_dialog import ServerDialog

    dialog = ServerDialog("http://127.0.0.1:8080/v1", api_key=raw)
    qtbot.addWidget(dialog)
    dialog.accept()
    assert not dialog.result() and f"the API key holds {said}" in dialog.problem.text()
    assert "SECRET" not in dialog.problem.text()
    with ScriptedServer() as server:
        with pytest.raises(ModelLoadError) as refused:
            connect(server.url, api_key=raw, timeout_s=10.0)
        assert str(refused.value) == (
            f"the API key holds {said}, which an HTTP header cannot carry; copy the key again from where it was issued."
        )
        if "\0" in raw:
            return  # no environment variable can hold a NUL
        monkeypatch.setenv("LATENCYLAB_API_KEY", raw)
        for command in (["ask", "Hi"], ["race", "Hi", "--a", "streaming=on", "--b", "streaming=off"]):
            assert main([*command, "--model", server.url]) == 1
            out, err = capsys.readouterr()
            assert f"LATENCYLAB_API_KEY holds {said}" in err and "Traceback" not in err
            assert "SECRET" not in out + err and KEY[:10] not in out + err
        assert server.requests == []  # nothing was sent with it


# -- a key the server echoes into its reply -------------------------------------------------------------------------


def _echoing_server() -> Script:
    """A reply that repeats the request's Authorization header, the key split across chunks (and into the reasoning)."""
    return Script(
        chunks=[
            openai_chunk(role="assistant"),
            openai_chunk(reasoning=f"They sent {KEY[:5]}"),
            openai_chunk(reasoning=f"{KEY[5:]}."),
            openai_chunk(f"Your header: Bearer {KEY[:5]}"),
            openai_chunk(KEY[5:20]),
            openai_chunk(f"{KEY[20:]}, and again {KEY} and a near miss sk-live-X"),
            openai_chunk(finish="stop"),
            "[DONE]",
        ],
        whole={"choices": [{"message": {"content": f"Your header: Bearer {KEY}"}, "finish_reason": "stop"}]},
    )


def test_a_key_echoed_into_a_reply_is_hidden_in_the_reply_and_everything_made_of_it():
    from core.timing.export import traces_to_csv, traces_to_json

    with ScriptedServer(_echoing_server()) as server:
        model = connect(server.url, api_key=KEY, timeout_s=10.0)
        trace = RemoteReply(model, "", [("user", "Hi")], GenerationSettings(max_new_tokens=20)).run_to_end()
    assert trace.text == f"Your header: Bearer {HIDDEN_KEY}, and again {HIDDEN_KEY} and a near miss sk-live-X"
    assert "".join(trace.token_texts).startswith(f"They sent {HIDDEN_KEY}.Your header")
    assert trace.output_tokens == 5  # a chunk whose text was held back still counts
    for made in (traces_to_json([trace]), traces_to_csv([trace]), "".join(trace.token_texts)):
        assert "SECRET" not in made and "0123456789abcdef" not in made


@pytest.mark.parametrize("flags", [[], ["--json"], ["--no-stream"]], ids=["streamed", "json", "whole"])
def test_ask_prints_no_key_a_server_echoes(flags, monkeypatch, capsys):
    from cli.main import main

    monkeypatch.setenv("LATENCYLAB_API_KEY", KEY)
    with ScriptedServer(_echoing_server()) as server:
        assert main(["ask", "Hi", "--model", server.url, *flags]) == 0
    out, err = capsys.readouterr()
    assert HIDDEN_KEY in out and "SECRET" not in out + err and "0123456789abcdef" not in out + err


def test_the_window_shows_and_saves_no_key_a_server_echoes(qtbot, open_window, monkeypatch):
    import os
    from pathlib import Path

    from tests.remote.test_remote_window import _ask, _connect

    monkeypatch.setenv("LATENCYLAB_API_KEY", KEY)
    with ScriptedServer(_echoing_server()) as server:
        window = open_window()
        try:
            _connect(qtbot, window, server.url)
            _ask(qtbot, window, "Hi")
            assert HIDDEN_KEY in window.chat_panel.transcript.toPlainText()
            assert "SECRET" not in window.chat_panel.transcript.toPlainText()
        finally:
            window.close()
    saved = [path.read_bytes() for path in Path(os.environ["XDG_DATA_HOME"]).rglob("*") if path.is_file()]
    assert saved and not any(b"SECRET" in data for data in saved)
