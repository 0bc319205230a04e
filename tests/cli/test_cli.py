"""The headless CLI as a user runs it: a real subprocess on the real embedded model."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.subprocess  # each test runs latencylab (or Python) in a child process


def latencylab(*args, timeout=300):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.mark.model
def test_ask_json_answers_paris_with_consistent_times(embedded_model):
    result = latencylab("ask", "What is the capital of France? Answer in one sentence.", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "Paris" in report["text"]
    assert {
        "model",
        "dtype",
        "device",
        "prompt_tokens",
        "output_tokens",
        "ttft_s",
        "tpot_s",
        "e2e_s",
        "itl_s",
        "token_times_s",
        "text",
        "stop_reason",
    } <= set(report)
    times = report["token_times_s"]
    assert report["output_tokens"] == len(times) == len(report["token_ids"])
    assert all(a < b for a, b in zip(times, times[1:]))
    assert report["ttft_s"] == times[0] and report["e2e_s"] == times[-1]
    assert report["tpot_s"] == pytest.approx((report["e2e_s"] - report["ttft_s"]) / (len(times) - 1))
    assert len(report["itl_s"]) == len(times) - 1
    assert report["stop_reason"] == "eos" and report["dtype"] == "native (Q4_1)" and report["device"] == "cpu"


@pytest.mark.model
def test_ask_streams_text_and_no_stream_prints_the_same_reply(embedded_model):
    question = ("ask", "Say hello in French.", "--max-new-tokens", "12")
    streamed = latencylab(*question)
    whole = latencylab(*question, "--no-stream")
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    assert streamed.stdout.strip() == whole.stdout.strip() != ""


@pytest.mark.model
def test_decode_loop_option_picks_the_loop_and_both_give_the_same_greedy_reply(embedded_model):
    reports = {}
    for loop in ("lean", "generate"):
        result = latencylab(
            "ask", "Name three colours.", "--max-new-tokens", "16", "--json", "--decode-loop", loop, "--dtype", "int4"
        )
        assert result.returncode == 0, result.stderr
        reports[loop] = json.loads(result.stdout)
        assert reports[loop]["decode_loop"] == loop and reports[loop]["settings"]["decode_loop"] == loop
    assert reports["lean"]["token_ids"] == reports["generate"]["token_ids"]


@pytest.mark.model
def test_generate_on_a_native_gguf_says_it_runs_on_the_kernels_instead(embedded_model):
    result = latencylab("ask", "Name three colours.", "--max-new-tokens", "4", "--json", "--decode-loop", "generate")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["decode_loop"] == "lean" and report["runtime"].startswith("Latency Lab's C kernels")
    assert "pick float32, bfloat16, int8 or int4 for generate()" in result.stderr


def test_bad_arguments_print_usage_and_exit_2():
    for args in (
        ["ask"],
        ["ask", "x", "--temperature", "3"],
        ["ask", "x", "--max-new-tokens", "-4"],
        ["ask", "x", "--dtype", "float8"],
        ["ask", "x", "--top-p", "0"],
        ["--bogus"],
        ["ask", "x", "--decode-loop", "fast"],
    ):
        result = latencylab(*args)
        assert result.returncode == 2, args
        assert "usage: latencylab" in result.stderr


def test_a_model_that_cannot_load_is_one_line_and_exit_1(tmp_path):
    result = latencylab("ask", "hi", "--model", str(tmp_path / "missing-model"))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert "missing-model" in result.stderr and "no such file or folder" in result.stderr


@pytest.mark.model
def test_first_launch_converts_the_gguf_with_progress_then_answers(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LATENCYLAB_CACHE_DIR": str(tmp_path / "empty-cache")}
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "ask", "Hi", "--max-new-tokens", "3"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "first launch" in result.stderr and result.stdout.strip()
    assert any((tmp_path / "empty-cache" / "gguf-native").iterdir())  # native, the default: tokenizer and config


def test_ask_json_carries_the_prefill_progress(tiny_model_folder):
    result = latencylab(
        "ask", "Tell me about lighthouses.", "--json", "--model", str(tiny_model_folder), "--max-new-tokens", "3"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    progress = report["prefill_progress"]
    assert [point["fraction"] for point in progress] == [0.0, 0.5, 1.0]  # the tiny model has two layers
    times = [point["t_s"] for point in progress]
    assert times == sorted(times) and 0 < times[-1] <= report["ttft_s"]
    assert "Reading the prompt" not in result.stderr  # stderr is not a terminal here: no redrawn line


def test_ask_json_carries_the_waterfall_and_the_roofline_against_cached_ceilings(
    tiny_model_folder, tmp_path, monkeypatch
):
    import torch

    from core.roofline.ceilings import Probe, measure_ceilings
    from core.roofline.counts import ArithmeticShape, prefill_counts
    from core.roofline.machine_load import LoadProbe

    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path))
    # This machine's ceilings, as a quiet measurement caches them (fake work, so the test times nothing).
    seconds = iter([1.0] * 64)
    clock = [0.0]

    def work():
        clock[0] += next(seconds)

    probes = [
        lambda: Probe("gemm_float32", "float32 GEMM", "flop/s", 1e11, work, "fake"),
        lambda: Probe("dram", "DRAM", "byte/s", 2e10, work, "fake"),
    ]
    quiet = LoadProbe(machine_busy=lambda: 0.0, own_busy=lambda: 0.0, clock=iter([0.0, 1.0]).__next__)
    measure_ceilings(torch.get_num_threads(), probes=probes, timer=lambda: clock[0], probe_load=quiet)
    result = latencylab(
        "ask",
        "Tell me about lighthouses.",
        "--json",
        "--model",
        str(tiny_model_folder),
        "--max-new-tokens",
        "3",
        "--dtype",
        "float32",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    segments = {segment["name"]: segment["duration_s"] for segment in report["waterfall"]["segments"]}
    assert sum(segments.values()) == pytest.approx(report["ttft_s"], abs=1e-6)
    roofline = report["roofline"]
    shape = ArithmeticShape.from_dict(report["arithmetic"])
    prefill = roofline["prefill"]
    assert prefill["flops"] == prefill_counts(shape, report["prompt_tokens"]).flops
    assert prefill["seconds"] == pytest.approx(segments["prefill"])
    assert prefill["ceiling"] == "gemm_float32" and prefill["share_of_ceiling"] == pytest.approx(
        prefill["flops"] / prefill["seconds"] / 1e11
    )
    decode = roofline["decode"]
    assert decode["bytes_per_s"] == pytest.approx(decode["bytes"] / report["tpot_s"])
    assert decode["ceiling"] == "dram" and decode["share_of_dram"] == pytest.approx(decode["bytes_per_s"] / 2e10)


def test_the_prefill_line_redraws_on_a_terminal_and_clears_at_the_first_token():
    import io

    from cli.progress_printer import PrefillLine
    from core.timing.events import PrefillProgress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    line = PrefillLine(terminal)
    for done, stamp in ((0, 0), (1, 1_000_000_000), (2, 2_000_000_000)):
        line(PrefillProgress(done, 4, stamp))
    assert terminal.getvalue().endswith("\rReading the prompt: 50% · about 2.0 s left".ljust(61))
    line.end()
    assert terminal.getvalue().endswith("\r")
    piped = io.StringIO()
    PrefillLine(piped)(PrefillProgress(1, 4, 5))
    assert piped.getvalue() == ""
