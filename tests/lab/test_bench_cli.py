"""`latencylab bench` as a user runs it: usage errors in-process, one short real sweep as a subprocess."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from cli.main import main

pytestmark = pytest.mark.subprocess  # each test runs latencylab (or Python) in a child process


@pytest.mark.parametrize(
    "args, words",
    [
        (["--prompt-words", "abc"], "'abc' is not a whole number"),
        (["--prompt-words", "10,,20"], "comma-separated"),
        (["--batch-sizes", "0"], "batch sizes must be a whole number from 1"),
        (["--batch-sizes", "4,4"], "must not repeat"),
        (["--sweeps", "prompt,speed"], "unknown sweep 'speed'"),
        (["--dtypes", "float8"], "dtype must be one of: native, float32, bfloat16, int8, int4; got 'float8'"),
        (["--new-tokens", "1"], "new tokens must be a whole number from 2"),
        (["--new-tokens", "many"], "invalid int value"),
        (["--repeats", "0"], "repeats must be a whole number from 1"),
        # said before the sweeps run: it was said after them, naming an internal staging file
        (["--json", "/"], "--json /: is a folder; give a file name"),
        (["--csv", "/nonexistent-folder/lab.csv"], "--csv /nonexistent-folder/lab.csv: its folder does not exist"),
    ],
)
def test_bad_input_is_a_usage_error(args, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: latencylab bench" in err and words in err


def test_help_names_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    for option in (
        "--sweeps",
        "--prompt-words",
        "--new-tokens",
        "--repeats",
        "--dtypes",
        "--batch-sizes",
        "--model",
        "--json",
        "--csv",
    ):
        assert option in text


@pytest.mark.model
def test_short_bench_writes_json_csv_and_a_summary(tmp_path, embedded_model):
    json_path, csv_path = tmp_path / "lab.json", tmp_path / "lab.csv"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "bench",
            "--prompt-words",
            "5,300",
            "--new-tokens",
            "4",
            "--repeats",
            "1",
            "--dtypes",
            "float32,bfloat16",
            "--batch-sizes",
            "1,2",
            "--history-turns",
            "2",
            "--json",
            str(json_path),
            "--csv",
            str(csv_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(json_path.read_text())
    assert [row["prompt_words"] for row in document["prompt"]] == [5, 300]
    assert [row["dtype"] for row in document["precision"]] == ["float32", "bfloat16"]
    assert [row["batch_size"] for row in document["batch"]] == [1, 2]
    assert [row["dtype"] for row in document["bandwidth"]] == ["float32", "bfloat16"]
    assert [row["turn"] for row in document["history"]] == [1, 2]
    assert len(document["verdicts"]) == 6  # the four claims, the history and the roofline
    table = list(
        csv.DictReader(
            io.StringIO("".join(line for line in csv_path.read_text().splitlines(True) if not line.startswith("#")))
        )
    )
    assert len(table) == 2 + 2 + 2 + 2 + 2 + 6

    out = result.stdout
    for heading in (
        "Machine:",
        "memory read bandwidth",
        "Prompt-length sweep",
        "Precision sweep",
        "Batch sweep",
        "This machine's ceilings",
        "Bandwidth ceiling",
        "Roofline: each prompt's two phases",
        "History sweep",
        "Verdicts",
    ):
        assert heading in out
    for verdict in document["verdicts"]:
        assert verdict["sentence"] in out
    assert "Long prompts slow the first token, not the rest: TTFT grew" in out
    assert "Traceback" not in result.stderr and "100%" in result.stderr


@pytest.mark.model
def test_a_model_that_cannot_load_is_one_line_and_exit_1(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "bench", "--sweeps", "prompt", "--model", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "latencylab: error:" in result.stderr and "nothing" in result.stderr


def test_a_size_sweep_whose_every_model_fails_is_exit_1_with_each_reason(tmp_path):
    corrupt, missing = tmp_path / "corrupt.gguf", tmp_path / "missing.gguf"
    corrupt.write_bytes(b"GGUF" + bytes(60))
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "bench", "--sweeps", "size", "--size-models", str(corrupt), str(missing)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    start = lines.index("latencylab: error: nothing was measured in the size sweep:")
    assert lines[start + 1].startswith("  corrupt.gguf: ") and "not a readable GGUF" in lines[start + 1]
    assert lines[start + 2].startswith("  missing.gguf: ") and "no such file" in lines[start + 2]
    assert "Warning: this run got only" not in result.stdout  # a run that measured nothing says nothing of the CPU
