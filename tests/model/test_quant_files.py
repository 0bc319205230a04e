"""The GGUF types people download, made from the embedded model by llama.cpp's quantiser, each run natively."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from llama_agreement import judge_against_llama_cpp

from core.model.gguf_cache import NATIVE_KIND, check_cache
from core.model.loader import load_model
from core.quant.agreement import agreement_text
from core.quant.gguf_blocks import GGUFWeights
from core.quant.gguf_decode import NATIVE_TYPES, PLANE_COUNT
from core.quant.gguf_header import read_header
from core.quant.split_int4_linear import native_linear_in_chunks
from tools import quant_files

pytestmark = [pytest.mark.model, pytest.mark.subprocess]

ALL_FILE_TYPES = ("Q4_1", *quant_files.FILE_TYPES)  # Q4_1: the embedded file itself


def latencylab(*args, timeout=600):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture(scope="module")
def files(llama_cpp):
    """llama.cpp's quantiser makes the files (once per machine, then cached)."""
    return {file_type: quant_files.quant_file(file_type) for file_type in ALL_FILE_TYPES}


@pytest.fixture(scope="module")
def opened(files):
    """Each file's tensors, its header read once (reading it once per tensor name took a minute)."""
    return {file_type: GGUFWeights(path) for file_type, path in files.items()}


def test_every_quant_type_appears_in_the_files(opened):
    found = {weights.tensor_type(name) for weights in opened.values() for name in weights.names()}
    assert set(quant_files.TENSOR_TYPES) <= found and set(quant_files.TENSOR_TYPES) <= set(NATIVE_TYPES)


def test_every_quantisation_shares_the_embedded_models_tokenizer_cache(files):
    """llama.cpp's quantiser rewrites general.file_type and keeps the rest of the metadata, which the tokenizer and
    config are built from: the native cache is keyed by that rest, so it is built once for all eight files."""
    headers = {path: read_header(path) for path in files.values()}
    assert len({header.fields.get("general.file_type") for header in headers.values()}) == len(files)
    assert len({header.model_digest for header in headers.values()}) == 1
    folders = {
        check_cache(path, lambda *_: None, NATIVE_KIND, header.model_digest).folder for path, header in headers.items()
    }
    assert len(folders) == 1


@pytest.mark.parametrize("qtype", quant_files.TENSOR_TYPES)
def test_a_real_tensor_of_each_type_runs_as_gguf_dequantises_it(opened, qtype):
    import gguf

    weights, name = next(
        (weights, name)
        for weights in opened.values()
        for name in weights.names()
        if name.startswith("blk.") and weights.tensor_type(name) == qtype
    )
    path = weights.path
    raw = np.asarray(weights.raw(name))
    rows, columns = weights.shape(name)
    from core.quant.gguf_decode import decode

    layer = native_linear_in_chunks(lambda start, end: decode(raw[start:end], qtype), rows, PLANE_COUNT[qtype])
    expected = torch.from_numpy(gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[qtype]).astype(np.float32))
    applied = layer(torch.eye(columns)).t()  # identity rows are exact in bfloat16
    assert (applied - expected).abs().max() <= 2**-7 * expected.abs().max(), f"{name} ({qtype}) of {path.name}"


@pytest.mark.parametrize("file_type", ALL_FILE_TYPES)
def test_ask_answers_natively_from_each_file(files, file_type):
    result = latencylab(
        "ask",
        "What is the capital of France? Answer in one sentence.",
        "--model",
        str(files[file_type]),
        "--json",
        "--max-new-tokens",
        "24",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dtype"] == f"native ({file_type})" and "precision_note" not in report
    assert report["output_tokens"] > 0 and report["text"].strip()


@pytest.mark.parametrize("file_type", ALL_FILE_TYPES)
def test_greedy_agreement_with_llama_cpp_on_the_same_file(files, file_type):
    """Teacher-forced top-1 over the fixed text against llama.cpp's logits on the same file, judged by llama.cpp's own
    variation (tests/model/llama_agreement.py). Agreement with the file's exact float32 dequantisation is reported by
    fast_decode.py's quant table."""
    path = files[file_type]
    native = load_model(str(path))
    ids = native.tokenizer(agreement_text())["input_ids"]
    assert len(ids) > 300
    judge_against_llama_cpp(native, path, ids, file_type)
