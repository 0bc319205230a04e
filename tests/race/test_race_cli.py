"""`latencylab race`: bad or clashing settings refused in one line (exit 2), a failed race said in one line, `--json`
holding both full reports and the verdict, and Ctrl+C in the middle printing what ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from cli import race as race_cli
from cli.main import main
from core.errors import LatencyLabError

PROMPT = "Name three colours of the rainbow."


@pytest.mark.parametrize(
    "args, says",
    [
        (["--a", "streaming=maybe"], "side A: streaming takes on or off; got 'maybe'."),
        (["--b", "colour=blue"], "--b: unknown key 'colour'"),
        (["--a", "streaming=on", "--a", "streaming=off"], "--a gives streaming twice"),
        (["--b", "model=http://127.0.0.1:9/v1", "--b", "dtype=float32"], "side B: dtype applies only to a local model"),
        (["--a", "served_model=tiny"], "side A: served_model applies only with a server URL"),
        (["--live", "--b", "streaming=off"], "live mode runs A and B at once, but both are local models"),
        (["--b", "max_new_tokens=100000"], "side B: max new tokens must be a whole number from 1 to 32,768"),
        (["--tpot-budget", "0"], "--tpot-budget must be above 0"),
        # before either side loads (it ran B's reply, then said A could not start)
        (["--a", "draft_model=/nonexistent.gguf"], "side A: the draft model: tried to load '/nonexistent.gguf'"),
    ],
)
def test_bad_or_clashing_settings_are_refused_in_one_line_with_exit_2(capsys, args, says):
    assert main(["race", PROMPT, *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("latencylab: race: ") and says in lines[0]


def test_a_race_that_fails_says_why_in_one_line_and_leaves_the_process_running(capsys, monkeypatch):
    # The race runs on a worker thread; its failure used to end the whole process with os._exit(1) after a traceback.
    def failing(*args, **kwargs):
        raise LatencyLabError("the chat template cannot be rendered")

    monkeypatch.setattr(race_cli, "run_race", failing)
    assert main(["race", PROMPT]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == ["latencylab: race: the chat template cannot be rendered"]


def test_a_fault_in_the_race_reaches_the_caller_as_its_own_exception(monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(race_cli, "run_race", broken)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        main(["race", PROMPT])


def test_race_json_holds_both_full_reports_and_the_verdict(run_cli, real_model):
    done = run_cli("race", PROMPT, "--max-new-tokens", "6", "--a", "streaming=on", "--b", "streaming=off", "--json")
    assert done.returncode == 0, done.stderr
    race = json.loads(done.stdout)
    assert race["format"] == "latencylab-race/1" and race["mode"] == "each alone" and race["stopped"] is False
    for key, streaming in (("a", True), ("b", False)):
        report = race[key]
        assert report["streaming"] is streaming and report["stop_reason"] in ("eos", "max_tokens")
        # as ask --json: the model, settings, metrics and tokens, with the waterfall
        assert {
            "model",
            "settings",
            "prompt_tokens",
            "ttft_s",
            "tpot_s",
            "e2e_s",
            "itl_s",
            "token_times_s",
            "token_ids",
            "text",
            "waterfall",
            "budget",
        } <= set(report)
        assert report["e2e_s"] == report["token_times_s"][-1]
    verdict = race["verdict"]
    assert verdict["a"]["first_text_s"] == race["a"]["ttft_s"] and verdict["b"]["first_text_s"] == race["b"]["e2e_s"]
    assert verdict["text_first"] in ("A", "B") and verdict["sentence"]
    assert race["budget"]["judged"] == 2 and race["budget"]["line"].endswith("within budget")
    assert "A: running alone" in done.stderr and "B: running alone" in done.stderr


@pytest.mark.subprocess
def test_ctrl_c_during_b_prints_what_ran_and_says_so(real_model):
    child = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "race", PROMPT, "--max-new-tokens", "200", "--b", "streaming=off", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        # Ctrl+C as a terminal delivers it: a CLI run in this test process (cli/exit_paths.py) may have left SIGINT
        # ignored here, and an ignored signal stays ignored in the child, whose Python then never sees it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        for line in child.stderr:  # A runs whole; Ctrl+C as soon as B is under way
            if line.startswith("latencylab: B: running alone"):
                child.send_signal(signal.SIGINT)
                break
        out, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err
    race = json.loads(out)
    assert race["stopped"] is True and race["stopped_during"] == "B" and race["verdict"] is None
    assert race["a"]["stop_reason"] in ("eos", "max_tokens") and race["a"]["text"]
    assert race["b"]["stop_reason"] == "stopped"
    assert "stopped (Ctrl+C): stopped during B: what ran is kept" in err
