"""Per-token text deltas join up to exactly what the tokenizer decodes for the whole sequence."""

import pytest

from core.generation.detokenizer import IncrementalDetokenizer

SAMPLES = [
    "The capital of France is Paris.",
    "  leading spaces, tabs\tand\nnew lines\n\n",
    "emoji 🤖🚀 and accents: café, naïve, Ærø",
    "中文字符和日本語のテキスト",
    "עברית ومعها العربية",
    "def f(x):\n    return x ** 2  # code",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_deltas_reassemble_the_decoded_text(embedded_tokenizer, text):
    tokenizer = embedded_tokenizer
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    detokenizer = IncrementalDetokenizer(tokenizer)
    deltas = [detokenizer.push(token_id) for token_id in ids]
    assert "".join(deltas) + detokenizer.flush() == tokenizer.decode(ids, skip_special_tokens=True)
    assert all("\ufffd" not in delta for delta in deltas)


def test_special_tokens_add_no_text(embedded_tokenizer):
    tokenizer = embedded_tokenizer
    detokenizer = IncrementalDetokenizer(tokenizer)
    assert detokenizer.push(tokenizer.eos_token_id) == ""
