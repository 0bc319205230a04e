"""The lab against a server (scripted here; tests/remote/test_llama_server.py runs it on the real one)."""

from __future__ import annotations

from core.lab.config import LabConfig
from core.lab.runner import run_lab
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk


def _reply_chunks(tokens: int) -> list:
    return [
        openai_chunk(role="assistant"),
        *(openai_chunk(f" w{i}") for i in range(tokens)),
        openai_chunk(finish="length"),
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": tokens}},
        "[DONE]",
    ]


def test_prompt_and_concurrency_sweeps_run_against_a_server_and_precision_says_it_does_not_apply():
    with ScriptedServer(Script(chunks=_reply_chunks(6), honour_max_tokens=True)) as server:
        config = LabConfig(
            sweeps=("prompt", "batch", "precision", "bandwidth", "history"),
            prompt_words=(5, 20),
            new_tokens=6,
            repeats=1,
            batch_sizes=(1, 3),
            model=server.url,
        )
        results = run_lab(config)
        bodies = [request["body"] for request in server.requests if request["body"]]
    assert results.error is None, results.error
    assert [row["prompt_words"] for row in results.prompt] == [5, 20]
    assert all(row["ttft_s"] > 0 and row["tpot_s"] > 0 and row["prompt_tokens"] == 12 for row in results.prompt)
    assert [row["concurrency"] for row in results.batch] == [1, 3]
    assert all(row["aggregate_tok_s"] > 0 and row["per_seq_tok_s"] > 0 for row in results.batch)
    assert results.precision == [] and results.bandwidth == []
    assert any("precision sweep does not apply" in note for note in results.notes)
    assert any("bandwidth ceiling does not apply" in note for note in results.notes)
    assert any("history sweep runs on a local model only" in note for note in results.notes)
    assert results.history == []
    precision = next(v for v in results.verdicts if v["key"] == "precision")
    assert precision["holds"] is None and "does not apply" in precision["evidence"]
    # warm-ups + 2 prompt lengths + (1 + 3) concurrent streams, each a chat request with a fixed length asked
    assert len(bodies) == 2 + 2 + 4
    assert all(body["max_tokens"] in (4, 6) for body in bodies)
