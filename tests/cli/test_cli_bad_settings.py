"""Invalid settings on the command line: usage, exit 2, and a message that names the value and the range."""

import pytest


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-new-tokens", "-4"], "max new tokens must be a whole number from 1 to 32,768; got -4."),
        (["--max-new-tokens", "0"], "max new tokens must be a whole number from 1 to 32,768; got 0."),
        (["--max-new-tokens", "1000000000"], "max new tokens must be a whole number from 1 to 32,768; got 1000000000."),
        (["--temperature", "2.5"], "temperature must be a number from 0 to 2; got 2.5."),
        (["--temperature", "-0.1"], "temperature must be a number from 0 to 2; got -0.1."),
        (["--temperature", "nan"], "temperature must be a number from 0 to 2; got nan."),
        (["--top-p", "0"], "top-p must be a number above 0 and at most 1; got 0.0."),
        (["--top-p", "1.5"], "top-p must be a number above 0 and at most 1; got 1.5."),
        (["--temperature", "5e-324"], "temperature must be 0 (greedy) or at least 0.001; got 5e-324."),
        (["--temperature", "0.0009"], "temperature must be 0 (greedy) or at least 0.001; got 0.0009."),
        (["--dtype", "float7"], "argument --dtype: invalid choice: 'float7'"),
        (["--max-new-tokens", "many"], "argument --max-new-tokens: invalid int value: 'many'"),
        # a server speculates by its own settings: the flags were ignored there without a word
        (["--model", "http://127.0.0.1:9/v1", "--draft-model", "small.gguf"], "apply to a local model"),
        (["--model", "http://127.0.0.1:9/v1", "--speculate", "ngram"], "apply to a local model"),
    ],
)
def test_bad_settings_are_refused_with_the_reason(args, message, run_cli):
    result = run_cli("ask", "hi", *args)
    assert result.returncode == 2
    # ask's own usage, with its options: the program's was printed for the values checked after parsing
    assert "usage: latencylab ask" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_ui_profile_that_cannot_be_written_is_refused_before_the_window_opens(run_cli):
    """It was written only later, with a traceback at each write."""
    result = run_cli("--profile-ui", "/no-such-folder/ui.json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--profile-ui /no-such-folder/ui.json: its folder does not exist" in result.stderr


@pytest.mark.model
def test_a_reply_budget_larger_than_the_context_is_refused_after_loading(embedded_model, run_cli):
    result = run_cli("ask", "hi", "--max-new-tokens", "9000")
    assert result.returncode == 1
    assert "max new tokens is 9,000, but the model's context window holds only 8,192" in result.stderr


@pytest.mark.parametrize("prompt", ["", " ", "\n\t  \n"])
def test_an_empty_prompt_is_refused_like_a_bad_argument(prompt, run_cli):
    result = run_cli("ask", prompt, "--max-new-tokens", "2")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "usage: latencylab" in result.stderr
    assert "argument prompt: the prompt is empty; give the question to ask" in result.stderr


@pytest.mark.model
def test_undecodable_argument_bytes_are_read_as_replacement_characters(embedded_model):
    """`latencylab ask "$(printf 'hello \\xff\\xfe world')"`: bytes that are not UTF-8 become U+FFFD, with a warning."""
    import json
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "ask",
            b"hello \xff\xfe world",
            "--system",
            b"be \xff",
            "--max-new-tokens",
            "3",
            "--json",
        ],
        capture_output=True,
        timeout=300,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, stderr
    assert "warning: 2 byte(s) of the argument are not UTF-8; each is read as U+FFFD" in stderr
    assert "warning: 1 byte(s)" in stderr and "Traceback" not in stderr
    assert json.loads(result.stdout)["output_tokens"] >= 1
