"""The fast int4/int8 paths: exact use of the GGUF's own 4-bit weights, and agreement with float32."""

import pytest
import torch

from core.model.loader import load_model
from core.quant.agreement import agreement_text, top1_agreement
from core.quant.gguf_blocks import GGUFWeights, gguf_name_for
from core.quant.groupwise import quantize_q4_groups
from core.quant.int4_linear import Int4Linear
from core.quant.int8_linear import Int8Linear


def test_int4_linear_multiplies_by_the_dequantized_weight():
    torch.manual_seed(0)
    groups = quantize_q4_groups(torch.randn(64, 96))
    layer = Int4Linear(groups, bias=torch.randn(64))
    x = torch.randn(5, 96)
    expected = x @ groups.dequantize().t() + layer.bias
    # bf16 activations in the kernel: errors stay within a percent of the output's scale.
    assert (layer(x) - expected).abs().max() < 0.01 * expected.abs().max()


def test_q4_rounding_stays_within_half_a_step():
    torch.manual_seed(1)
    weight = torch.randn(8, 64)
    groups = quantize_q4_groups(weight)
    error = (groups.dequantize() - weight).abs().view(8, 2, 32)
    assert torch.all(error <= groups.scales[..., None] / 2 + 1e-6)


def test_q8_head_reproduces_q8_groups_and_embedding_rows_exactly():
    from core.quant.q8_head import Q8Embedding, Q8Head, quantize_q8_groups

    torch.manual_seed(3)
    groups = quantize_q8_groups(torch.randn(48, 64))
    weight = groups.dequantize_rows(torch.arange(48))
    assert torch.equal(quantize_q8_groups(weight).quants, groups.quants)  # re-rounding the grid is exact
    x = torch.randn(2, 64)
    expected = x @ weight.t()
    assert (Q8Head(groups)(x) - expected).abs().max() < 0.01 * expected.abs().max()
    assert torch.equal(Q8Embedding(groups)(torch.tensor([3, 7])), weight[[3, 7]])


def test_int8_linear_is_close_to_float():
    torch.manual_seed(2)
    weight = torch.randn(48, 64)
    layer = Int8Linear(weight)
    x = torch.randn(3, 64)
    assert torch.allclose(layer(x), x @ weight.t(), rtol=0.05, atol=0.1)


@pytest.mark.model
def test_int4_layers_hold_exactly_the_files_q4_1_weights(embedded_model):
    weights = GGUFWeights(embedded_model.source.gguf_file)
    layers = embedded_model.model.model.layers
    for module_name in (
        "model.layers.0.self_attn.q_proj",
        "model.layers.7.self_attn.k_proj",
        "model.layers.3.mlp.down_proj",
        "model.layers.29.self_attn.v_proj",
    ):
        groups = weights.q4_1(gguf_name_for(module_name))
        reference = embedded_model.model.get_submodule(module_name).weight
        assert torch.allclose(groups.dequantize(), reference, atol=1e-6), module_name
    assert len(layers) == 30


@pytest.mark.model
def test_int4_model_is_smaller_and_agrees_with_float32(embedded_model, int4_model):
    assert int4_model.dtype == "int4" and int4_model.parameter_count == embedded_model.parameter_count
    # The embedding keeps its own int8 table beside the head's packed copy, so stored bytes shrink
    # 4x while a decode step (body plus head) reads about 5x fewer.
    assert int4_model.weight_bytes < embedded_model.weight_bytes / 4
    ids = embedded_model.tokenizer(agreement_text())["input_ids"]
    assert len(ids) > 300
    assert top1_agreement(embedded_model, int4_model, ids) >= 0.97


@pytest.mark.model
def test_int4_generates_the_same_answer(embedded_model, int4_model):
    from core.chats.session import ChatSession
    from core.generation.local_reply import LocalReply
    from core.settings import GenerationSettings

    session = ChatSession()
    session.add_user("What is the capital of France? Answer in one sentence.")
    ids = session.build_prompt(int4_model.tokenizer, int4_model.context_window, 40).input_ids
    trace = LocalReply(int4_model, ids, GenerationSettings(max_new_tokens=40)).run_to_end()
    assert "Paris" in trace.text and trace.stop_reason == "eos"


def test_int8_of_a_folder_model_loads(tiny_model_folder):
    loaded = load_model(str(tiny_model_folder), dtype="int8")
    assert any(isinstance(m, Int8Linear) for m in loaded.model.modules())
    float_bytes = load_model(str(tiny_model_folder)).weight_bytes
    assert loaded.weight_bytes < float_bytes


def test_int4_of_a_folder_model_rounds_its_weights(tiny_model_folder):
    loaded = load_model(str(tiny_model_folder), dtype="int4")
    assert any(isinstance(m, Int4Linear) for m in loaded.model.modules())
