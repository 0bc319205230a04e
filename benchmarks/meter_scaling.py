"""How the meter's GUI cost grows with reply length (1k, 4k tokens) and chat length (50 turns).

A tiny random-weight model makes tokens fast, so the window's own work dominates: the per-token
work (text append, trace record, plot buffers, applied once a frame) must stay flat, and only the 25 Hz frame may grow.
The long reply is also replayed with made-up tokens and no model, because a model decoding beside
the window changes what the window's work costs as its own context grows.
Run: .venv/bin/python benchmarks/meter_scaling.py [--long 4000] [--turns 50]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import _common
from _synthetic_reply import gui_cpu_at_each_token

from core.model.loader import load_model
from gui.frame_interval import FRAME_INTERVAL_MS


def build_tiny_model(folder: Path, context: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = load_model(None).tokenizer
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def instrument_per_token_work(window) -> list:
    """Time the per-token steps the window's frames perform, by wrapping the plain methods they call.

    A frame applies the tokens that arrived since the last one (gui/chat/live_reply.py): each token's stamp goes into
    the meter, then one text insert and one visible-text point for all of them. A frame's cost is shared out over its
    tokens, so the figures stay per token. The frame itself is left alone: PySide6 dispatches a replaced or overridden
    slot differently, which would measure something the app never does.
    """
    per_token_us: list[float] = []
    # The GUI thread's CPU time at each token (at its frame's end), so differences also count the repaints and frames
    # the work causes later (text layout, plots), not just the calls themselves.
    window.gui_cpu_ns_at_token = []
    pieces = [
        (window.meter, "record_token"),
        (window.chat_panel.transcript, "append_reply_text"),
        (window.meter, "show_visible_text"),
    ]
    pending = {"us": 0.0, "tokens": 0}

    def timed(owner, name, closes_frame, counts_token):
        original = getattr(owner, name)

        def wrapper(*args):
            # CPU time, not wall time: waiting for the GIL while the model decodes is not the frame's work.
            started = time.thread_time_ns()
            result = original(*args)
            pending["us"] += (time.thread_time_ns() - started) / 1000
            pending["tokens"] += counts_token
            if closes_frame and pending["tokens"]:
                tokens = pending["tokens"]
                window.gui_cpu_ns_at_token.extend([time.thread_time_ns()] * tokens)
                per_token_us.extend([pending["us"] / tokens] * tokens)
                pending["us"], pending["tokens"] = 0.0, 0
            return result

        setattr(owner, name, wrapper)

    for position, (owner, name) in enumerate(pieces):
        timed(owner, name, closes_frame=position == len(pieces) - 1, counts_token=position == 0)
    return per_token_us


def mean(values):
    return sum(values) / len(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", type=int, default=4000)
    parser.add_argument("--turns", type=int, default=50)
    _common.add_json_option(parser)
    args = parser.parse_args()
    _common.start_report(args, "meter_scaling")
    folder = Path(_common.scratch_dir("latencylab-tiny-")) / "tiny"
    build_tiny_model(folder, context=args.long + 1024)
    loaded = load_model(str(folder))

    from _window_driver import WindowDriver

    driver = WindowDriver(loaded, streaming=True)
    durations = instrument_per_token_work(driver.window)
    frame_costs = {}

    def frame_cost_ms() -> float:
        """Median of 5: the first one after a reply also re-renders axes whose range just changed."""
        costs = []
        for _ in range(5):
            started = time.perf_counter()
            driver.window.meter.tick(time.perf_counter_ns(), True, driver.window.replies.record.trace)
            driver.window.meter.grab()  # renders every plot and card synchronously
            costs.append((time.perf_counter() - started) * 1000)
        return sorted(costs)[2]

    print(f"reply length: one reply of {args.long} tokens from a tiny random model")
    trace = driver.ask("Write anything.", args.long)
    per_token = durations
    windows = [(0, 100), (900, 1000), (args.long - 100, args.long)]
    cpu = driver.window.gui_cpu_ns_at_token
    for start, end in windows:
        gui_us = (cpu[end - 1] - cpu[start]) / (end - 1 - start) / 1000
        print(
            f"  tokens {start:>5}-{end:<5}: per-token work CPU {mean(per_token[start:end]):7.1f} us; "
            f"GUI thread CPU per token (the work, text layout, repaints, frames) {gui_us:7.1f} us"
        )
    frame_costs[args.long] = frame_cost_ms()
    growth = mean(per_token[windows[-1][0] : windows[-1][1]]) / mean(per_token[100:200])
    print(f"  per-token cost at the end / near the start: {growth:.2f}x (flat means ~1x)")
    print(
        f"  one frame (setData + full repaint, median of 5) with {trace.output_tokens} points: "
        f"{frame_costs[args.long]:.1f} ms"
    )
    cpu = gui_cpu_at_each_token(args.long)
    print(
        f"  the same length with no model decoding beside the window (made-up tokens, {FRAME_INTERVAL_MS} ms frames):"
    )
    for start, end in windows:
        print(
            f"    tokens {start:>5}-{end:<5}: GUI thread CPU per token "
            f"{(cpu[end - 1] - cpu[start]) / (end - 1 - start) / 1000:7.1f} us"
        )

    driver.new_chat()
    durations.clear()
    print(f"chat length: {args.turns} turns of 40 tokens")
    turn_means = []
    for turn in range(args.turns):
        before = len(durations)
        driver.ask(f"Turn {turn}: say something.", 40)
        turn_means.append(mean(durations[before:]))
    first, last = mean(turn_means[1:6]), mean(turn_means[-5:])
    print(f"  per-token work CPU, turns 2-6: {first:.1f} us; last 5 turns: {last:.1f} us; ratio {last / first:.2f}x")
    print(f"  one frame (median of 5) with {args.turns} turns of history: {frame_cost_ms():.1f} ms")
    print(
        "  with no model decoding beside the window, GUI thread CPU per token at tokens 100-300 of a reply "
        "(the first ones also pay for new widgets' first paints):"
    )
    for earlier in (1, args.turns, 2 * args.turns):
        cpu = gui_cpu_at_each_token(300, earlier_turns=earlier)
        print(f"    after {earlier:>3} turns: {(cpu[-1] - cpu[100]) / (len(cpu) - 1 - 100) / 1000:7.1f} us")
    driver.close()


if __name__ == "__main__":
    main()
