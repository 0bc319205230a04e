"""Invalid settings on the command line: usage, exit 2, and a message that names the value and the range."""

import pytest

from run_cli import latencylab


@pytest.mark.parametrize("args, message", [
    (["--max-new-tokens", "-4"], "max new tokens must be a whole number from 1 to 32,768; got -4."),
    (["--max-new-tokens", "0"], "max new tokens must be a whole number from 1 to 32,768; got 0."),
    (["--max-new-tokens", "1000000000"], "max new tokens must be a whole number from 1 to 32,768; got 1000000000."),
    (["--temperature", "2.5"], "temperature must be a number from 0 to 2; got 2.5."),
    (["--temperature", "-0.1"], "temperature must be a number from 0 to 2; got -0.1."),
    (["--temperature", "nan"], "temperature must be a number from 0 to 2; got nan."),
    (["--top-p", "0"], "top-p must be a number above 0 and at most 1; got 0.0."),
    (["--top-p", "1.5"], "top-p must be a number above 0 and at most 1; got 1.5."),
    (["--dtype", "float7"], "argument --dtype: invalid choice: 'float7'"),
    (["--max-new-tokens", "many"], "argument --max-new-tokens: invalid int value: 'many'"),
])
def test_bad_settings_are_refused_with_the_reason(args, message):
    result = latencylab("ask", "hi", *args)
    assert result.returncode == 2
    assert "usage: latencylab" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.model
def test_a_reply_budget_larger_than_the_context_is_refused_after_loading(embedded_model):
    result = latencylab("ask", "hi", "--max-new-tokens", "9000")
    assert result.returncode == 1
    assert "max new tokens is 9,000, but the model's context window holds only 8,192" in result.stderr
