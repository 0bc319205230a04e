"""`latencylab doctor` end to end, as a user runs it: one line a check and the advice, or --json; a server's URL is
checked for reachability only."""

from __future__ import annotations

import json
import socket

CHECKS = (
    "cores",
    "load",
    "memory",
    "openmp",
    "kernels",
    "ceilings",
    "model",
    "model_fit",
    "page_cache",
    "decode_ceiling",
)


def test_doctor_json_has_every_check(run_cli):
    result = run_cli("doctor", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["model"] == "embedded"
    assert [check["name"] for check in document["checks"]] == list(CHECKS)
    for check in document["checks"]:
        assert set(check) == {"name", "figure", "value", "status", "advice"}
        assert check["status"] in ("ok", "warn", "info") and check["figure"]
    by_name = {check["name"]: check for check in document["checks"]}
    assert by_name["model"]["value"]["context_tokens"] == 8192
    assert by_name["model"]["value"]["weight_bytes"] > 0
    assert by_name["cores"]["value"]["engine_threads"] >= 1
    assert 0 <= by_name["page_cache"]["value"]["resident_fraction"] <= 1
    warned = [check["advice"] for check in document["checks"] if check["status"] == "warn"]
    assert document["advice"][: len(warned)] == warned  # the warnings' advice first
    assert "Traceback" not in result.stderr


def test_doctor_prints_one_line_a_check_and_the_advice(run_cli):
    result = run_cli("doctor", "--model", "embedded")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "latencylab doctor: embedded"
    assert [line.split()[1] for line in lines[1 : 1 + len(CHECKS)]] == list(CHECKS)
    assert any(line.startswith("What would make replies faster") for line in lines)


def test_a_model_that_cannot_be_read_fails_the_command_and_says_whether_it_is_there(run_cli, tmp_path):
    corrupt = tmp_path / "model.gguf"
    corrupt.write_bytes(b"GGUF" + bytes(60))
    for model, advice in ((corrupt, "download it again"), (tmp_path / "missing.gguf", "an existing .gguf file")):
        result = run_cli("doctor", "--model", str(model))
        assert result.returncode == 1, result.stdout
        (line,) = [line for line in result.stdout.splitlines() if line.split()[1:2] == ["model"]]
        assert line.split()[0] == "FAIL" and "cannot be read" in line and advice in result.stdout
        assert "Traceback" not in result.stderr


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_a_server_url_is_checked_for_reachability_only(run_cli):
    """A server nothing answers at fails the check and the command, as a model file that cannot be read does (it read
    WARN and exited 0)."""
    result = run_cli("doctor", "--model", f"http://127.0.0.1:{closed_port()}/v1", "--json")
    assert result.returncode == 1, result.stderr
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert checks["server"]["status"] == "fail" and checks["server"]["value"]["reachable"] is False
    assert "not checked from here" in checks["model"]["figure"]
    assert "page_cache" not in checks and "Traceback" not in result.stderr


def test_a_reachable_server_is_named_with_its_models():
    """A scripted OpenAI-compatible server (tests/remote/scripted_server.py): only its models list is asked for."""
    from core.doctor.remote import remote_check
    from tests.remote.scripted_server import Script, ScriptedServer

    with ScriptedServer(Script(models=("model-a", "model-b"))) as server:
        check = remote_check(server.url)
        asked = [request["path"] for request in server.requests]
    assert check.status == "ok" and check.value["reachable"] is True
    assert check.value["served_models"] == ["model-a", "model-b"] and check.value["model"] == "model-a"
    assert check.figure.startswith(f"OpenAI-compatible at {server.url} answered in ")
    assert all(not path.endswith("/chat/completions") for path in asked)  # nothing generated
