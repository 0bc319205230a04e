"""The chosen model's lines: its size and context, whether it fits in free memory, and the decode speed this
machine's measured memory bandwidth allows it."""

from __future__ import annotations

from core.doctor.check import INFO, OK, WARN, Check, gigabytes
from core.doctor.memory import Memory
from core.doctor.model_figures import ModelFigures
from core.roofline.ceilings import Ceilings, format_rate
from core.roofline.counts import decode_counts
from core.roofline.placement import memory_ceiling


def model_check(figures: ModelFigures) -> Check:
    value = {
        "name": figures.name,
        "kind": figures.kind,
        "file": str(figures.file) if figures.file else None,
        "file_bytes": figures.file_bytes,
        "file_type": figures.file_type,
        "parameters": figures.parameters,
        "weight_bytes": figures.weight_bytes,
        "context_tokens": figures.context,
        "kv_bytes_per_token": figures.kv_bytes_per_token(),
        "kv_bytes_at_context": figures.kv_bytes_at_context(),
        "notes": figures.notes,
    }
    named = figures.file_type and figures.file_type not in figures.name
    parts = [figures.name + (f" ({figures.file_type})" if named else "")]
    if figures.weight_bytes:
        parts.append(f"weights {gigabytes(figures.weight_bytes)}")
    elif figures.file_bytes:
        parts.append(f"file {gigabytes(figures.file_bytes)}")
    if figures.parameters:
        parts.append(f"{figures.parameters / 1e6:,.0f}M parameters")
    parts.append(f"context {figures.context:,} tokens" if figures.context else "context unknown")
    per_token, full = figures.kv_bytes_per_token(), figures.kv_bytes_at_context()
    if per_token and full:
        parts.append(f"KV cache {per_token / 1024:,.1f} KiB a token, {gigabytes(full)} at the full context")
    figure = "; ".join(parts) + ("; " + "; ".join(figures.notes) if figures.notes else "")
    return Check("model", figure, value, INFO)


def fit_check(figures: ModelFigures, memory: Memory) -> Check:
    """Whether the weights and a full context's KV cache fit in the memory free now."""
    weights, kv = figures.load_bytes, figures.kv_bytes_at_context() or 0
    value = {"load_bytes": weights, "kv_bytes_at_context": kv or None, "available_bytes": memory.available}
    if weights is None or memory.available is None:
        missing = "free memory" if memory.available is None else "the memory the model takes"
        return Check("model_fit", f"unknown ({missing} could not be read)", value, INFO)
    # As loaded: a mapped file whole (header and vocabulary too), more than the weights the model line counts
    figure = (
        f"needs {gigabytes(weights)} for the model as loaded + {gigabytes(kv)} KV at the full context; "
        f"{gigabytes(memory.available)} free"
    )
    if weights > memory.available:
        return Check(
            "model_fit",
            figure,
            value,
            WARN,
            f"the weights ({gigabytes(weights)}) are larger than free memory ({gigabytes(memory.available)}): every "
            f"token reads them from disk, seconds a token; use a smaller quant of this model (Q4_K_M) or a smaller "
            f"model, or close programs that hold memory",
        )
    per_token = figures.kv_bytes_per_token()
    if weights + kv > memory.available and figures.context and per_token:
        fits = int((memory.available - weights) // per_token)
        return Check(
            "model_fit",
            figure,
            value,
            WARN,
            f"the weights fit, but a chat past about {fits:,} tokens fills free memory with its KV cache: keep chats "
            f"shorter, or close programs that hold memory",
        )
    return Check("model_fit", figure, value, OK)


def ceilings_check(ceilings: Ceilings | None, measured_now: bool = False) -> Check:
    if ceilings is None:
        return Check(
            "ceilings",
            "none measured on this CPU yet",
            {},
            INFO,
            "measure this machine's GEMM and memory ceilings (about 10 s, once): `latencylab doctor --measure` or "
            "`latencylab bench --sweeps bandwidth`; then decode's expected speed is shown",
        )
    value = {
        "cpu": ceilings.cpu,
        "threads": ceilings.threads,
        "measured_at": ceilings.measured_at,
        "others_share": ceilings.others_share,
        "loaded": ceilings.loaded,
        "ceilings": {name: {"value": c.value, "unit": c.unit} for name, c in ceilings.ceilings.items()},
    }
    when = "measured now" if measured_now else f"cached {ceilings.measured_at}"
    figure = f"{ceilings.summary()}; {when}, {ceilings.threads} threads"
    if ceilings.loaded:
        return Check(
            "ceilings",
            figure,
            value,
            WARN,
            "other programs were busy while these were measured, so they are low and were not cached: measure again "
            "on a quiet machine",
        )
    return Check("ceilings", figure, value, OK)


def decode_check(figures: ModelFigures, ceilings: Ceilings | None) -> Check:
    """tok/s at most = the memory ceiling's bytes/s over the bytes a decode step reads (core/roofline/counts.py), at
    the start of a chat and with the context full."""
    shape = figures.shape
    if shape is None:
        return Check("decode_ceiling", "unknown (the model's shape could not be counted)", {}, INFO)
    ceiling = memory_ceiling(shape, ceilings)
    first = decode_counts(shape, 0).bytes
    value: dict = {"bytes_per_token": first, "ceiling": None, "ceiling_bytes_per_s": None}
    if ceiling is None:
        return Check(
            "decode_ceiling",
            f"a decode step reads {gigabytes(first)}; no memory ceiling measured to turn that into tok/s",
            value,
            INFO,
        )
    full = decode_counts(shape, figures.context - 1).bytes if figures.context else None
    value.update(
        ceiling=ceiling.name,
        ceiling_bytes_per_s=ceiling.value,
        tokens_per_s=ceiling.value / first,
        bytes_per_token_at_context=full,
        tokens_per_s_at_context=ceiling.value / full if full else None,
    )
    figure = (
        f"at most {ceiling.value / first:,.0f} tok/s ({gigabytes(first)} a token at {format_rate(ceiling.value, 'byte/s')} "
        f"{ceiling.label})"
    )
    if full:
        figure += f", {ceiling.value / full:,.0f} tok/s with the context full"
    return Check("decode_ceiling", figure, value, OK)
