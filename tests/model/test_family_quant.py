"""Quantising a model of each family the lean loop covers keeps what that family needs: biases, fused layers, scales."""

import copy

import pytest
import torch
import transformers

from core.quant.apply import quantize_int4, quantize_int8
from core.quant.int4_linear import Int4Linear

SMALL = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    pad_token_id=0,
)


def random_model(config):
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


@pytest.mark.parametrize("quantize", [quantize_int4, quantize_int8])
def test_a_quantised_gemma_still_scales_its_embeddings(quantize):
    """Gemma multiplies its embeddings by sqrt(hidden); the quantised table tied to the head must too."""
    model = random_model(transformers.Gemma2Config(**SMALL))
    ids = torch.arange(10, 40).unsqueeze(0)
    with torch.inference_mode():
        expected = model.get_input_embeddings()(ids)
        quantised = copy.deepcopy(model)
        quantize(quantised)
        got = quantised.get_input_embeddings()(ids)
    assert torch.allclose(got, expected, atol=0.02 * expected.abs().max().item())


def test_phi3s_fused_layers_and_qwen2s_biases_are_quantised_to_int4():
    phi3 = random_model(transformers.Phi3Config(**SMALL))
    qwen2 = random_model(transformers.Qwen2Config(**SMALL))
    q_bias = qwen2.model.layers[0].self_attn.q_proj.bias.detach().clone()
    quantize_int4(phi3)
    quantize_int4(qwen2)
    assert isinstance(phi3.model.layers[0].self_attn.qkv_proj, Int4Linear)
    assert isinstance(phi3.model.layers[0].mlp.gate_up_proj, Int4Linear)
    assert torch.equal(qwen2.model.layers[0].self_attn.q_proj.bias, q_bias)


def write_one_q4_1_tensor(path, architecture, name, weight):
    import gguf
    from gguf import quants

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_uint32(f"{architecture}.attention.head_count", 4)
    writer.add_uint32(f"{architecture}.attention.head_count_kv", 4)
    blocks = quants.quantize(weight.numpy(), gguf.GGMLQuantizationType.Q4_1)
    writer.add_tensor(name, blocks, raw_shape=blocks.shape, raw_dtype=gguf.GGMLQuantizationType.Q4_1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.parametrize("architecture", ["qwen2", "qwen3", "phi3", "gemma2", "llama"])
def test_q_rows_come_back_in_the_models_order_from_each_architectures_gguf(tmp_path, architecture):
    """llama.cpp interleaves a Llama file's q rows (transformers undoes it); other architectures keep them."""
    from core.quant.gguf_blocks import GGUFWeights

    torch.manual_seed(0)
    weight = torch.randn(64, 64)
    path = tmp_path / f"{architecture}.gguf"
    write_one_q4_1_tensor(path, architecture, "blk.0.attn_q.weight", weight)
    rows = GGUFWeights(path).q4_1("blk.0.attn_q.weight").dequantize()
    if architecture == "llama":
        # rows stored as llama.cpp stores them come back, per head, as [even rows..., odd rows...]
        per_head = weight.view(4, 8, 2, 64)
        weight = per_head.transpose(1, 2).reshape(64, 64)
    assert (rows - weight).abs().max() < 0.25 * weight.abs().max()


def test_phi3s_fused_layers_have_gguf_names():
    from core.quant.gguf_blocks import gguf_name_for

    assert gguf_name_for("model.layers.2.self_attn.qkv_proj") == "blk.2.attn_qkv.weight"
    assert gguf_name_for("model.layers.2.mlp.gate_up_proj") == "blk.2.ffn_up.weight"
