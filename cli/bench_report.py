"""The plain-text summary `latencylab bench` prints at the end: one table per sweep, then the verdicts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.lab.machine import contention_warning, machine_summary
from core.lab.results import LabResults

Column = tuple[str, Callable[[dict], str]]


def format_table(columns: Sequence[Column], rows: Sequence[dict]) -> str:
    """Right-aligned columns; a column empty in every row (such as 'error' when nothing failed) is left out."""
    columns = [(title, render) for title, render in columns if any(render(row) for row in rows)]
    cells = [[render(row) for _, render in columns] for row in rows]
    headers = [title for title, _ in columns]
    widths = [max([len(header)] + [len(line[i]) for line in cells]) for i, header in enumerate(headers)]
    lines = [
        "  ".join(header.rjust(width) for header, width in zip(headers, widths)),
        "  ".join("-" * width for width in widths),
    ]
    lines += ["  ".join(cell.rjust(width) for cell, width in zip(line, widths)) for line in cells]
    return "\n".join(lines)


def number(key: str, scale: float = 1.0, digits: int = 1) -> Callable[[dict], str]:
    def render(row: dict) -> str:
        value = row.get(key)
        if value is None:
            return "–"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return str(value)
        return f"{value * scale:,.{digits}f}"

    return render


def text(key: str) -> Callable[[dict], str]:
    return lambda row: "–" if row.get(key) is None else str(row[key])


PROMPT_COLUMNS: Sequence[Column] = (
    ("words", number("prompt_words", digits=0)),
    ("prompt tokens", number("prompt_tokens", digits=0)),
    ("TTFT ms", number("ttft_s", 1000)),
    ("TPOT ms", number("tpot_s", 1000)),
    ("decode tok/s", number("decode_tok_s")),
    ("E2E s", number("e2e_s", digits=2)),
    ("residual %", number("residual_pct", digits=2)),
    ("steady residual %", number("steady_residual_pct", digits=2)),
)
PRECISION_COLUMNS: Sequence[Column] = (
    ("dtype", text("dtype")),
    ("weight MB", number("weight_bytes", 1e-6)),
    ("TTFT ms", number("ttft_s", 1000)),
    ("decode tok/s", number("decode_tok_s")),
    (
        "same tokens as float32",
        lambda row: (
            "–" if row.get("token_agreement") is None else f"{row['token_agreement']:.0%} of {row['compared_tokens']}"
        ),
    ),
    ("error", lambda row: row.get("error") or ""),
)
BATCH_COLUMNS: Sequence[Column] = (
    ("batch", number("batch_size", digits=0)),
    ("step ms", number("step_time_s", 1000)),
    ("per-seq tok/s", number("per_seq_tok_s")),
    ("aggregate tok/s", number("aggregate_tok_s")),
    ("error", lambda row: row.get("error") or ""),
)
HISTORY_COLUMNS: Sequence[Column] = (
    ("turn", number("turn", digits=0)),
    ("prompt tokens", number("prompt_tokens", digits=0)),
    ("cached", number("cached_tokens", digits=0)),
    ("prefilled", number("prefilled_tokens", digits=0)),
    ("TTFT ms, cache on", number("ttft_on_s", 1000)),
    ("TTFT ms, cache off", number("ttft_off_s", 1000)),
)
BANDWIDTH_COLUMNS: Sequence[Column] = (
    ("dtype", text("dtype")),
    ("weight MB", number("weight_bytes", 1e-6)),
    ("ceiling tok/s", number("ceiling_tok_s")),
    ("measured tok/s", number("decode_tok_s")),
    ("of ceiling", lambda row: "–" if row.get("fraction_of_ceiling") is None else f"{row['fraction_of_ceiling']:.0%}"),
)


ROOFLINE_COLUMNS: Sequence[Column] = (
    ("prompt tokens", number("prompt_tokens", digits=0)),
    ("prefill GFLOP", number("prefill_flops", 1e-9)),
    ("FLOP/byte", number("prefill_intensity", digits=0)),
    ("prefill GFLOP/s", number("prefill_flops_per_s", 1e-9, digits=0)),
    ("decode MB/token", number("decode_bytes", 1e-6)),
    ("FLOP/byte ", number("decode_intensity")),
    ("decode GB/s", number("decode_bytes_per_s", 1e-9)),
)


def ceilings_section(ceilings: dict) -> str:
    """Each ceiling with its method; flagged when measured under load."""
    from core.roofline.ceilings import Ceilings, format_rate

    measured = Ceilings.from_dict(ceilings)
    state = (
        "measured under load: not cached"
        if measured.loaded
        else f"cached for this CPU, measured {measured.measured_at}"
        if measured.from_cache
        else "measured now, cached"
    )
    lines = [f"This machine's ceilings ({state})"]
    lines += [
        f"  {ceiling.label}: {format_rate(ceiling.value, ceiling.unit)} ({ceiling.method})"
        for ceiling in measured.ceilings.values()
    ]
    return "\n".join(lines + [f"  {note}" for note in measured.notes])


def format_summary(results: LabResults) -> str:
    config = results.config
    sections = ["Machine: " + machine_summary(results.machine, results.bandwidth_measurement)]
    warning = contention_warning(results.machine)
    if warning:
        sections.append(warning)
    if results.model and results.model.get("remote"):
        sections.append(
            f"Model: {results.model['served_model']} on a {results.model['server_kind']} server at "
            f"{results.model['server_url']} (timed over the wire; tokens from the server's usage)"
        )
    elif results.model:
        sections.append(
            f"Model: {results.model['model']} ({results.model['dtype']}, "
            f"{results.model['weight_bytes'] / 1e6:,.0f} MB of weights)"
        )
    repeats = f"median of {config.get('repeats')} runs"
    if results.prompt:
        sections.append(
            f"Prompt-length sweep ({config.get('new_tokens')} new tokens, greedy, {repeats})\n"
            + format_table(PROMPT_COLUMNS, results.prompt)
        )
    if results.precision:
        sections.append(f"Precision sweep ({repeats})\n" + format_table(PRECISION_COLUMNS, results.precision))
    if results.batch and results.model and results.model.get("remote"):
        sections.append(
            f"Concurrency sweep: the batch sizes as simultaneous streams ({config.get('new_tokens')} new "
            f"tokens per stream, {repeats})\n" + format_table(BATCH_COLUMNS, results.batch)
        )
    elif results.batch:
        sections.append(
            f"Batch sweep ({config.get('new_tokens')} new tokens per sequence, {repeats})\n"
            + format_table(BATCH_COLUMNS, results.batch)
        )
    if results.ceilings:
        sections.append(ceilings_section(results.ceilings))
    if results.bandwidth:
        sections.append(
            "Bandwidth ceiling (bandwidth / weight bytes)\n" + format_table(BANDWIDTH_COLUMNS, results.bandwidth)
        )
    if results.history:
        sections.append(
            f"History sweep: a chat, prompt cache on and off ({config.get('new_tokens')} new tokens a "
            f"turn, {repeats})\n" + format_table(HISTORY_COLUMNS, results.history)
        )
    roofline = [row for row in results.prompt if row.get("prefill_flops_per_s")]
    if roofline:
        sections.append(
            "Roofline: each prompt's two phases (FLOPs and bytes counted from the model's shape)\n"
            + format_table(ROOFLINE_COLUMNS, roofline)
        )
    for note in results.notes:
        sections.append(f"Not run: {note}")
    if results.cancelled:
        sections.append(f"Cancelled: {results.row_count()} finished rows kept.")
    if results.error:
        sections.append(f"Stopped by an error: {results.error}")
    verdicts = "\n".join(f"{index}. {verdict['sentence']}" for index, verdict in enumerate(results.verdicts, 1))
    sections.append("Verdicts\n" + verdicts)
    if results.duration_s is not None:
        sections.append(f"Finished in {results.duration_s:.0f} s.")
    return "\n\n".join(sections)
