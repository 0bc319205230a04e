"""Crafted GGUFs (one field or one tensor's shape edited) are refused in one line naming the fault, before C sees
them."""

from __future__ import annotations

import pytest
from tiny_gguf import write_tiny_llama

from core.errors import ModelLoadError
from core.model.loader import load_model

# name: (write_tiny_llama's options, what the one-line refusal must say). The first seven are the issue's memory
# faults in the kernels (heap overflows, SIGSEGV, nonsense), the rest its refusals that said the wrong thing.
CASES = {
    "output 65,536 rows against a 49,152-row embedding": (
        {"shapes": {"output.weight": (65536, 256)}},
        "tensor output.weight has shape [65536, 256], but its llama metadata implies [49152, 256]",
    ),
    "embedding_length 128 while the tensors are 256 wide": (
        {"metadata": {"embedding_length": 128, "rope.dimension_count": 32}},
        "tensor token_embd.weight has shape [49152, 256], but its llama metadata implies [49152, 128]",
    ),
    "embedding_length 128 alone": ({"metadata": {"embedding_length": 128}}, "llama.rope.dimension_count (64)"),
    "embedding_length 1024": (
        {"metadata": {"embedding_length": 1024}},
        "tensor token_embd.weight has shape [49152, 256], but its llama metadata implies [49152, 1024]",
    ),
    "token_embd dims [256, 0, 49152] at the end of the file": (
        {"shapes": {"token_embd.weight": (49152, 0, 256)}, "last": ("token_embd.weight",)},
        "tensor token_embd.weight has shape [49152, 0, 256]",
    ),
    "blk.1's ffn_gate and ffn_up with 32,768 rows": (
        {"shapes": {"blk.1.ffn_gate.weight": (32768, 256), "blk.1.ffn_up.weight": (32768, 256)}},
        "tensor blk.1.ffn_gate.weight has shape [32768, 256], but its llama metadata implies [512, 256] (FFN size 512",
    ),
    "attn_q with 1,024 rows": (
        {"shapes": {"blk.0.attn_q.weight": (1024, 256)}},
        "tensor blk.0.attn_q.weight has shape [1024, 256], but its llama metadata implies [256, 256]",
    ),
    "attn_q with 2,048 columns": (
        {"shapes": {"blk.0.attn_q.weight": (256, 2048)}},
        "tensor blk.0.attn_q.weight has shape [256, 2048]",
    ),
    "ffn_down transposed": ({"shapes": {"blk.0.ffn_down.weight": (512, 256)}}, "blk.0.ffn_down.weight"),
    "a norm of the wrong length": ({"shapes": {"blk.1.attn_norm.weight": (255,)}}, "blk.1.attn_norm.weight"),
    "block_count 10^7": (
        {"metadata": {"block_count": 10**7}},
        "llama.block_count is 10000000: a model has 1 to 4096 layers",
    ),
    "block_count 3 with 2 layers": (
        {"metadata": {"block_count": 3}},
        "llama.block_count is 3, but its tensors hold 2 layers (blk.0 to blk.1)",
    ),
    "block_count 10^8": (
        {"metadata": {"block_count": 10**8}},
        "llama.block_count is 100000000: a model has 1 to 4096 layers",
    ),
    "block_count 0": ({"metadata": {"block_count": 0}}, "llama.block_count is 0"),
    "head_count_kv 3 with 4 heads": (
        {"metadata": {"attention.head_count_kv": 3}},
        "attention.head_count (4) is not a multiple of its attention.head_count_kv (3)",
    ),
    "head_count 0": ({"metadata": {"attention.head_count": 0}}, "llama.attention.head_count is 0"),
    "head_count 2^26": (
        {"metadata": {"attention.head_count": 2**26}},
        "embedding_length (256) is not a whole number of its 67108864 heads",
    ),
    "general.alignment 0": ({"metadata": {"general.alignment": 0}}, "general.alignment (0) is not a power of two"),
    "general.alignment 2^30": (
        {"metadata": {"general.alignment": 2**30}},
        "general.alignment (1073741824) puts the tensor data at byte",
    ),
    "general.alignment 48": ({"metadata": {"general.alignment": 48}}, "general.alignment (48) is not a power of two"),
    "rope.freq_base 0": (
        {"metadata": {"rope.freq_base": 0.0}},
        "llama.rope.freq_base is '0.0', not a finite number > 0",
    ),
    # The vocabulary's faults, said in its words rather than the tokenizer library's ("failed to extract enum PyMerges")
    "a merge of three tokens": (
        {"tokenizer_edits": {"tokenizer.ggml.merges": lambda merges: ["zz qq xx", *merges[1:]]}},
        "vocabulary cannot be read: merge 0 ('zz qq xx') is not two tokens separated by one space",
    ),
    "no tokenizer model": (
        {"tokenizer_edits": {"tokenizer.ggml.model": lambda model: None}},
        "vocabulary cannot be read: it names no tokenizer model (tokenizer.ggml.model)",
    ),
    "no tokens": (
        {"tokenizer_edits": {"tokenizer.ggml.tokens": lambda tokens: None}},
        "vocabulary cannot be read: it has no tokens (tokenizer.ggml.tokens)",
    ),
    "no merges for a BPE vocabulary": (
        {"tokenizer_edits": {"tokenizer.ggml.merges": lambda merges: None}},
        "vocabulary cannot be read: a BPE vocabulary ('gpt2') needs its merges (tokenizer.ggml.merges)",
    ),
}


class CraftedFiles(dict):
    """Each case's file, written the first time a test asks for it: under pytest-xdist a worker writes only the
    cases it runs (all of them took 22 s, on every worker)."""

    def __init__(self, folder):
        super().__init__()
        self.folder = folder

    def __missing__(self, name):
        options, _ = CASES[name]
        self[name] = write_tiny_llama(self.folder / f"case{list(CASES).index(name)}.gguf", **options)
        return self[name]


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    return CraftedFiles(tmp_path_factory.mktemp("crafted"))


@pytest.mark.parametrize("name", list(CASES))
def test_a_crafted_file_is_refused_in_one_line_naming_the_fault(crafted, name):
    with pytest.raises(ModelLoadError) as refused:
        load_model(str(crafted[name]))  # native, on the kernels: the default
    message = str(refused.value)
    assert CASES[name][1] in message and "\n" not in message
    assert "vocabulary or chat template" not in message


def test_a_gguf_cut_by_one_byte_is_called_cut_not_a_tokenizer_fault(tmp_path):
    good = write_tiny_llama(tmp_path / "good.gguf")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:-1])
    with pytest.raises(
        ModelLoadError,
        match=r"its tensor blk\.1\.\w+\.weight ends at byte [\d,]+, past the end of the "
        r"file \([\d,]+ bytes\): the file is cut short",
    ):
        load_model(str(cut))


@pytest.mark.parametrize(
    "name",
    [
        "output 65,536 rows against a 49,152-row embedding",
        "block_count 10^8",
        "block_count 0",
        "head_count_kv 3 with 4 heads",
        "token_embd dims [256, 0, 49152] at the end of the file",
    ],
)
def test_the_cli_refuses_a_crafted_file_in_one_line_with_no_traceback(crafted, name, run_cli):
    # The issue's runs: an abort, a SIGSEGV, or a refusal followed by a traceback from KernelModel.__del__.
    result = run_cli("ask", "hi", "--model", str(crafted[name]), "--json", "--max-new-tokens", "4")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("latencylab:")]
    assert len(said) == 1 and CASES[name][1] in said[0], result.stderr


@pytest.mark.parametrize("length", [0, 2**62])
def test_a_context_length_that_cannot_be_right_is_said_not_silently_replaced(tmp_path, length):
    model = load_model(str(write_tiny_llama(tmp_path / "tiny.gguf", metadata={"context_length": length})))
    assert model.context_window > 0 and model.notice is not None and model.describe().notice == model.notice
    assert f"gives {length:,}" in model.notice and f"taken as {model.context_window:,} positions" in model.notice


def test_a_usable_context_length_gives_no_notice(tmp_path):
    model = load_model(str(write_tiny_llama(tmp_path / "tiny.gguf")))
    assert model.context_window == 256 and model.notice is None
