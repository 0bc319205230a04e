"""The lab against a server: the prompt-length sweep over the wire, and concurrency (N simultaneous streams) for batching."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator, Sequence

from core.lab.cancellation import MeasurementError, check_cancel
from core.lab.measure import SweepContext, median_or_none, required_metric
from core.lab.prompt_sweep import chapter_prompt, prompt_row
from core.remote.connect import RemoteModel
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from core.timing.trace import ReplyTrace

# As the local batch sweep: a short prompt keeps prefill small, so the rows show decode.
CONCURRENCY_PROMPT_WORDS = 10
NOT_APPLICABLE = {
    "precision": "the precision sweep does not apply to a remote engine: the server chose its weights' precision. "
    "Compare precisions by pointing the lab at servers that run each one.",
    "bandwidth": "the bandwidth ceiling does not apply to a remote engine: it would measure this machine, not the "
    "server's.",
    "history": "the history sweep runs on a local model only: a server's prompt cache cannot be switched off from "
    "here. Over a chat, the meter's prompt-cache map shows what the server reports it reused.",
    "speculation": "the speculation sweep runs on a local model only: a server speculates (or not) as it was "
    "started. Over a chat, the meter shows the draft counts a server reports.",
}


def remote_reply(model: RemoteModel, words: int, new_tokens: int, context: SweepContext) -> RemoteReply:
    """One greedy reply to the chapter's prompt; the server is asked to ignore EOS where it can, so N is fixed."""
    return RemoteReply(
        model,
        "",
        [("user", chapter_prompt(words))],
        GenerationSettings(max_new_tokens=new_tokens, temperature=0.0),
        stop=context.cancel,
        ignore_eos=True,
    )


def measured(trace: ReplyTrace, context: SweepContext) -> ReplyTrace:
    check_cancel(context.cancel)
    if trace.error:
        raise MeasurementError(f"the server's reply failed: {trace.error}")
    if trace.output_tokens < 2:
        raise MeasurementError(f"the server sent {trace.output_tokens} token(s); TPOT needs at least two.")
    return trace


def sweep_remote_prompt_lengths(
    model: RemoteModel, prompt_words: Sequence[int], new_tokens: int, repeats: int, context: SweepContext
) -> Iterator[dict]:
    """As the local sweep, over the wire: TTFT is the client's, prompt tokens and N the server's usage."""
    progress = context.progress
    context.check_cancel()
    progress.announce("prompt sweep: warm-up")
    measured(remote_reply(model, min(prompt_words), min(new_tokens, 4), context).run_to_end(), context)
    progress.advance("prompt sweep: warmed up")
    for words in prompt_words:
        traces = []
        for repeat in range(repeats):
            context.check_cancel()
            progress.announce(f"prompt sweep: {words:,} words, run {repeat + 1}/{repeats}")
            traces.append(measured(remote_reply(model, words, new_tokens, context).run_to_end(), context))
            progress.advance(f"prompt sweep: {words:,} words, run {repeat + 1}/{repeats} done")
        prompt_tokens = traces[0].prompt_tokens or _prompt_tokens_by_asking(model, words, context)
        row = prompt_row(
            words,
            prompt_tokens,
            int(statistics.median(t.output_tokens for t in traces)),
            [trace.metrics() for trace in traces],
        )
        row["chunks"] = int(statistics.median(trace.chunks or 0 for trace in traces))
        row["server_prompt_ms"] = median_or_none(
            ((t.server.timings if t.server else None) or {}).get("prompt_ms") for t in traces
        )
        yield row


def _prompt_tokens_by_asking(model: RemoteModel, words: int, context: SweepContext) -> int:
    """A server that sends no usage in its stream (llama-cpp-python) still does in a whole response: ask for one token."""
    reply = RemoteReply(
        model,
        "",
        [("user", chapter_prompt(words))],
        GenerationSettings(max_new_tokens=1),
        stop=context.cancel,
        streaming=False,
    )
    trace = reply.run_to_end()
    check_cancel(context.cancel)
    return trace.prompt_tokens


def sweep_concurrency(
    model: RemoteModel, levels: Sequence[int], new_tokens: int, repeats: int, context: SweepContext
) -> Iterator[dict]:
    """N streams at once, as vLLM's bench serve does with --max-concurrency: aggregate and per-stream tok/s."""
    progress = context.progress
    context.check_cancel()
    progress.announce("concurrency sweep: warm-up")
    measured(remote_reply(model, CONCURRENCY_PROMPT_WORDS, min(new_tokens, 4), context).run_to_end(), context)
    progress.advance("concurrency sweep: warmed up")
    for streams in levels:
        runs = []
        try:
            for repeat in range(repeats):
                context.check_cancel()
                progress.announce(f"concurrency sweep: {streams} streams, run {repeat + 1}/{repeats}")
                runs.append(_concurrent_run(model, streams, new_tokens, context))
                progress.advance(f"concurrency sweep: {streams} streams, run {repeat + 1}/{repeats} done")
        except MeasurementError as error:
            progress.done += repeats - len(runs) - 1
            progress.advance(f"concurrency sweep: {streams} streams failed")
            yield {"batch_size": streams, "concurrency": streams, "error": str(error)}
            continue
        step = median_or_none(run["tpot_s"] for run in runs)
        yield {
            "batch_size": streams,  # the local batch sweep's column, so plots and verdicts read both alike
            "concurrency": streams,
            "new_tokens": new_tokens,
            "repeats": len(runs),
            "ttft_s": median_or_none(run["ttft_s"] for run in runs),
            "step_time_s": step,
            "per_seq_tok_s": 1.0 / step if step else None,
            "aggregate_tok_s": median_or_none(run["aggregate_tok_s"] for run in runs),
        }


def _concurrent_run(model: RemoteModel, streams: int, new_tokens: int, context: SweepContext) -> dict:
    """Start every stream at once; aggregate tok/s is all tokens over the span from the first start to the last token."""
    started_ns = time.perf_counter_ns()
    replies = [
        remote_reply(model, CONCURRENCY_PROMPT_WORDS, new_tokens, context).start(started_ns) for _ in range(streams)
    ]
    traces = [measured(reply.run_to_end(), context) for reply in replies]
    last_ns = max(trace.timestamps_ns[-1] for trace in traces)
    metrics = [trace.metrics() for trace in traces]
    return {
        "ttft_s": statistics.median(required_metric(m.ttft_s) for m in metrics),
        "tpot_s": statistics.median(required_metric(m.tpot_s) for m in metrics),
        "aggregate_tok_s": sum(trace.output_tokens for trace in traces) / ((last_ns - started_ns) / 1e9),
    }
