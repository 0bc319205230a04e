"""The chapter's claims judged against a lab result, each with the numbers behind the verdict in plain words."""

from __future__ import annotations

from core.lab.results import LabResults
from core.lab.roofline_verdict import judge_roofline
from core.lab.verdict_record import pct
from core.lab.verdict_record import verdict as _verdict
from core.remote.spec import is_remote_spec

CLAIM_PROMPT = "Long prompts slow the first token, not the rest"
CLAIM_PRECISION = (
    "Decode speed ≈ memory bandwidth / model bytes, so smaller or quantised weights are faster, almost in proportion"
)
CLAIM_BATCH = "Batching is nearly free"
CLAIM_TOTAL = "Total time ≈ TTFT + TPOT × N"
CLAIM_HISTORY = "With the prompt cache, TTFT follows the new tokens, not the history"
CLAIM_SIZE = "Decode reads every weight once a token: a model k times larger decodes about k times slower"
CLAIM_SPECULATION = (
    "Checking k drafts reads the weights once, as one decode step does, so accepted drafts are nearly free"
)

# The thresholds turn the chapter's words into tests; they are stated in every verdict so a reader can disagree.
# "Slow the first token": TTFT at least doubles from the shortest to the longest prompt.
MIN_TTFT_GROWTH = 2.0
# "Not the rest" / "roughly normal speed": TPOT grows by at most a quarter.
MAX_TPOT_GROWTH = 1.25
# "Almost in proportion": a format with k times fewer bytes decodes at least 0.75 k times faster.
MIN_PROPORTION = 0.75
# "Nearly free" / "little extra latency": each sequence's step time grows by at most half at the largest batch.
MAX_BATCH_STEP_GROWTH = 1.5
# "Total time ≈ ...": within 5 %, the acceptance bound.
MAX_RESIDUAL_PCT = 5.0
# "Nearly free": on the copying prompt the best draft length cuts TPOT to at most 0.7x with the reply unchanged.
MAX_SPECULATION_TPOT_RATIO = 0.7
# "Follows the new tokens, not the history": over a chat whose prompt at least doubles, TTFT with the cache grows
# at most 1.5×, and less than half as much as without it.
MIN_HISTORY_GROWTH = 2.0
MAX_CACHED_TTFT_GROWTH = 1.5


def judge(results: LabResults) -> list[dict]:
    verdicts = [
        judge_prompt(results),
        judge_precision(results),
        judge_batch(results),
        judge_total(results),
        judge_history(results),
        judge_roofline(results),
    ]
    asked = results.config.get("sweeps") or ()
    if "speculation" in asked:  # asked for by name (core/lab/config.py)
        verdicts.insert(-1, judge_speculation(results))
    if "size" in asked:
        verdicts.insert(-1, judge_size(results))
    return verdicts


def judge_prompt(results: LabResults) -> dict:
    criterion = (
        f"TTFT grows at least {MIN_TTFT_GROWTH:g}× from the shortest to the longest prompt while TPOT "
        f"grows at most {MAX_TPOT_GROWTH:g}×"
    )
    rows = sorted((r for r in results.prompt if r.get("ttft_s") and r.get("tpot_s")), key=lambda r: r["prompt_tokens"])
    if len(rows) < 2 or rows[0]["prompt_tokens"] == rows[-1]["prompt_tokens"]:
        return _verdict(
            "prompt", CLAIM_PROMPT, None, "needs the prompt sweep with at least two prompt lengths", criterion
        )
    short, long = rows[0], rows[-1]
    ttft_growth = long["ttft_s"] / short["ttft_s"]
    tpot_growth = long["tpot_s"] / short["tpot_s"]
    evidence = (
        f"TTFT grew {ratio(ttft_growth, MIN_TTFT_GROWTH)} from {short['prompt_tokens']:,} to {long['prompt_tokens']:,} prompt "
        f"tokens ({ms(short['ttft_s'])} to {ms(long['ttft_s'])}) while TPOT changed {ratio(tpot_growth, MAX_TPOT_GROWTH)} "
        f"({ms(short['tpot_s'])} to {ms(long['tpot_s'])})"
    )
    holds = ttft_growth >= MIN_TTFT_GROWTH and tpot_growth <= MAX_TPOT_GROWTH
    return _verdict("prompt", CLAIM_PROMPT, holds, evidence, criterion)


def judge_precision(results: LabResults) -> dict:
    criterion = f"every format with k× fewer weight bytes than float32 decodes at least {MIN_PROPORTION:g}·k× faster"
    if is_remote_spec(results.config.get("model")):
        from core.lab.remote_sweeps import NOT_APPLICABLE

        return _verdict("precision", CLAIM_PRECISION, None, NOT_APPLICABLE["precision"].rstrip("."), criterion)
    measured = {r["dtype"]: r for r in results.precision if r.get("decode_tok_s") and r.get("weight_bytes")}
    reference = measured.get("float32")
    smaller = [r for r in measured.values() if reference and r["weight_bytes"] < reference["weight_bytes"]]
    if reference is None or not smaller:
        return _verdict(
            "precision",
            CLAIM_PRECISION,
            None,
            "needs the precision sweep with float32 and at least one smaller format",
            criterion,
        )
    ceilings = {r["dtype"]: r for r in results.bandwidth if r.get("fraction_of_ceiling") is not None}
    parts, holds = [], True
    for row in smaller:
        fewer = reference["weight_bytes"] / row["weight_bytes"]
        faster = row["decode_tok_s"] / reference["decode_tok_s"]
        holds = holds and faster >= MIN_PROPORTION * fewer
        parts.append(f"{row['dtype']} has {ratio(fewer)} fewer weight bytes and decodes {ratio(faster)} as fast")
    evidence = "; ".join(parts)
    if ceilings:
        evidence += (
            " — measured decode reaches "
            + ", ".join(f"{pct(r['fraction_of_ceiling'])} ({r['dtype']})" for r in ceilings.values())
            + " of the bandwidth ceiling"
        )
    failed = [r["dtype"] for r in results.precision if r.get("error")]
    if failed:
        evidence += f"; {', '.join(failed)} could not be measured"
    return _verdict("precision", CLAIM_PRECISION, holds, evidence, criterion)


def judge_batch(results: LabResults) -> dict:
    criterion = (
        f"at the largest batch, each sequence's decode step is at most {MAX_BATCH_STEP_GROWTH:g}× slower "
        f"than at batch 1"
    )
    rows = {r["batch_size"]: r for r in results.batch if r.get("step_time_s")}
    if 1 not in rows or len(rows) < 2:
        return _verdict("batch", CLAIM_BATCH, None, "needs the batch sweep with batch 1 and a larger batch", criterion)
    single, largest = rows[1], rows[max(rows)]
    throughput = largest["aggregate_tok_s"] / single["aggregate_tok_s"]
    step_growth = largest["step_time_s"] / single["step_time_s"]
    evidence = (
        f"from batch 1 to {largest['batch_size']}, aggregate throughput rose {ratio(throughput)} "
        f"({single['aggregate_tok_s']:,.0f} to {largest['aggregate_tok_s']:,.0f} tok/s; "
        f"{largest['batch_size']}× if free) while each sequence's step time grew {ratio(step_growth, MAX_BATCH_STEP_GROWTH)} "
        f"({ms(single['step_time_s'])} to {ms(largest['step_time_s'])})"
    )
    free_up_to = max(
        size for size, row in rows.items() if row["step_time_s"] <= MAX_BATCH_STEP_GROWTH * single["step_time_s"]
    )
    if free_up_to not in (1, largest["batch_size"]):
        evidence += f"; it stayed nearly free up to batch {free_up_to}"
    from core.lab.roofline_verdict import batch_explanation

    why = batch_explanation(results, single, largest)
    if why:
        evidence += f". Why: {why}"
    return _verdict("batch", CLAIM_BATCH, step_growth <= MAX_BATCH_STEP_GROWTH, evidence, criterion)


def judge_total(results: LabResults) -> dict:
    criterion = (
        f"at every prompt length, E2E is within {MAX_RESIDUAL_PCT:g}% of TTFT + TPOT × (N − 1) with TPOT "
        f"taken as the run's median gap between tokens (which does not use E2E), median over runs"
    )
    rows = [r for r in results.prompt if r.get("residual_pct") is not None and r.get("steady_residual_pct") is not None]
    if not rows:
        return _verdict("total", CLAIM_TOTAL, None, "needs the prompt sweep", criterion)
    worst = max(rows, key=lambda r: abs(r["residual_pct"]))
    worst_steady = max(rows, key=lambda r: abs(r["steady_residual_pct"]))
    evidence = (
        f"with N = {rows[0]['new_tokens']} new tokens and TPOT taken as the median gap between tokens, "
        f"TTFT + TPOT × (N − 1) was off E2E by at most {abs(worst_steady['steady_residual_pct']):.1f}% at "
        f"every prompt length, against the {MAX_RESIDUAL_PCT:g}% the claim allows (worst at "
        f"{worst_steady['prompt_tokens']:,} tokens); from the medians of TTFT, "
        f"TPOT and E2E it was within {abs(worst['residual_pct']):.1f}% (worst at "
        f"{worst['prompt_tokens']:,} tokens)"
    )
    holds = abs(worst_steady["steady_residual_pct"]) <= MAX_RESIDUAL_PCT
    return _verdict("total", CLAIM_TOTAL, holds, evidence, criterion)


def judge_history(results: LabResults) -> dict:
    criterion = (
        f"over a chat whose prompt grows at least {MIN_HISTORY_GROWTH:g}×, TTFT with the prompt cache grows at "
        f"most {MAX_CACHED_TTFT_GROWTH:g}× from the first turn to the last, and less than half as much as "
        f"without it"
    )
    if is_remote_spec(results.config.get("model")):
        from core.lab.remote_sweeps import NOT_APPLICABLE

        return _verdict("history", CLAIM_HISTORY, None, NOT_APPLICABLE["history"].rstrip("."), criterion)
    rows = sorted((r for r in results.history if r.get("ttft_on_s") and r.get("ttft_off_s")), key=lambda r: r["turn"])
    if len(rows) < 2:
        return _verdict("history", CLAIM_HISTORY, None, "needs the history sweep with at least two turns", criterion)
    first, last = rows[0], rows[-1]
    growth = last["prompt_tokens"] / first["prompt_tokens"]
    cached = last["ttft_on_s"] / first["ttft_on_s"]
    whole = last["ttft_off_s"] / first["ttft_off_s"]
    new = [r["prefilled_tokens"] for r in rows[1:]]
    evidence = (
        f"over {last['turn']} turns the prompt grew from {first['prompt_tokens']:,} to "
        f"{last['prompt_tokens']:,} tokens ({ratio(growth)}); with the prompt cache TTFT went from "
        f"{ms(first['ttft_on_s'])} to {ms(last['ttft_on_s'])} ({ratio(cached, MAX_CACHED_TTFT_GROWTH)}), prefilling "
        f"{min(new):,}-{max(new):,} new tokens a turn after the first; without it, from "
        f"{ms(first['ttft_off_s'])} to {ms(last['ttft_off_s'])} ({ratio(whole)}), the whole chat each turn"
    )
    if growth < MIN_HISTORY_GROWTH:
        return _verdict(
            "history", CLAIM_HISTORY, None, evidence + "; the prompt did not grow enough to tell", criterion
        )
    holds = cached <= MAX_CACHED_TTFT_GROWTH and (cached - 1) < 0.5 * (whole - 1)
    return _verdict("history", CLAIM_HISTORY, holds, evidence, criterion)


def judge_speculation(results: LabResults) -> dict:
    criterion = (
        f"on the copying prompt, the best draft length brings TPOT to at most {MAX_SPECULATION_TPOT_RATIO:g}x of "
        f"decoding without drafts, every reply token for token the same"
    )
    rows = [row for row in results.speculation if row.get("tpot_ratio") and row.get("draft_tokens")]
    copying = [row for row in rows if row.get("prompt") == "copying"]
    if not copying:
        return _verdict("speculation", CLAIM_SPECULATION, None, "needs the speculation sweep", criterion)
    best = min(copying, key=lambda row: row["tpot_ratio"])
    free = [row for row in rows if row.get("prompt") == "free"]
    best_free = min(free, key=lambda row: row["tpot_ratio"]) if free else None
    evidence = (
        f"copying: with {best['draft_tokens']} drafts a step TPOT was {ratio(best['tpot_ratio'])} of none, "
        f"{pct(best['acceptance'] or 0)} of drafts accepted, {best['tokens_per_pass'] or 0:.1f} tokens a verify pass"
    )
    if best_free is not None:
        evidence += (
            f"; free writing: at best {ratio(best_free['tpot_ratio'])} with {best_free['draft_tokens']} drafts, "
            f"{pct(best_free['acceptance'] or 0)} accepted (few copies to find, and each rejected draft costs its "
            f"share of a wider pass)"
        )
    same = all(row.get("same_reply") for row in results.speculation if row.get("draft_tokens"))
    if not same:
        evidence += "; a reply differed from the one without speculation"
    holds = best["tpot_ratio"] <= MAX_SPECULATION_TPOT_RATIO and same
    return _verdict("speculation", CLAIM_SPECULATION, holds, evidence, criterion)


def judge_size(results: LabResults) -> dict:
    criterion = (
        f"from the smallest model to the largest, decode slows at least {MIN_PROPORTION:g}× as much as the weights "
        f"grow (k times the bytes: at least {MIN_PROPORTION:g} k times the TPOT)"
    )
    rows = sorted(
        (row for row in results.size if row.get("weight_bytes") and row.get("decode_tok_s")),
        key=lambda row: row["weight_bytes"],
    )
    if len(rows) < 2 or rows[0]["weight_bytes"] == rows[-1]["weight_bytes"]:
        return _verdict("size", CLAIM_SIZE, None, "needs the size sweep with two models of different sizes", criterion)
    smallest, largest = rows[0], rows[-1]
    grown = largest["weight_bytes"] / smallest["weight_bytes"]
    slowed = smallest["decode_tok_s"] / largest["decode_tok_s"]
    bandwidth = (results.bandwidth_measurement or {}).get("bytes_per_s")
    each = "; ".join(
        f"{row['model']}: {row['weight_bytes'] / 1e9:.2f} GB at {row['decode_tok_s']:.1f} tok/s, "
        f"reading {row['read_bytes_s'] / 1e9:.1f} GB/s"
        + (f" ({pct(row['read_bytes_s'] / bandwidth)} of the memory's {bandwidth / 1e9:.1f} GB/s)" if bandwidth else "")
        for row in rows
    )
    evidence = f"{ratio(grown)} the bytes decoded {ratio(slowed)} slower ({pct(slowed / grown)} of proportion). {each}"
    if smallest["read_bytes_s"] < 0.5 * largest["read_bytes_s"]:
        evidence += (
            ". The smallest read its weights at less than half the rate the largest did: something other than "
            "reading its weights set its pace"
        )
    return _verdict("size", CLAIM_SIZE, slowed >= MIN_PROPORTION * grown, evidence, criterion)


def ratio(value: float, against: float | None = None) -> str:
    """value as "2.4×"; against: the threshold the verdict compares it with, where more digits are shown if rounding
    would put it on the other side ("2.0×" for 1.956 beside "does not hold" at 2×: now "1.96×")."""
    if value >= 10:
        return f"{value:,.0f}×"
    digits = 1
    while against is not None and digits < 4 and (round(value, digits) >= against) != (value >= against):
        digits += 1
    return f"{value:.{digits}f}×"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"
