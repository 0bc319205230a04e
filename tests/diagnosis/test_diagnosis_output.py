"""The diagnosis where scripts read it: `ask --json` and `chat --json` give every reply's findings as a list of
{kind, summary, cause, evidence, figure, advice, cost_s}."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.model
FIELDS = {"kind", "summary", "cause", "evidence", "figure", "advice", "cost_s"}


def test_ask_json_carries_the_replys_diagnosis(run_cli, real_model):
    done = run_cli("ask", "--json", "--max-new-tokens", "8", "Name a colour.")
    assert done.returncode == 0, done.stderr
    diagnosis = json.loads(done.stdout)["diagnosis"]
    assert diagnosis and all(set(finding) == FIELDS for finding in diagnosis)
    assert all(finding["summary"] and finding["evidence"] for finding in diagnosis)


def test_chat_json_diagnoses_every_turn(run_cli, real_model):
    done = run_cli("chat", "--json", "--max-new-tokens", "6", input="Name a colour.\nName another.\n")
    assert done.returncode == 0, done.stderr
    turns = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(turns) == 2
    assert all(turn["diagnosis"] and turn["diagnosis"][0]["kind"] for turn in turns)
    # The second turn reused the first's history: its prompt cache is no finding.
    assert "prompt_cache" not in [finding["kind"] for finding in turns[1]["diagnosis"]]
