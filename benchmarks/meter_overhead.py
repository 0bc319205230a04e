"""TPOT of the app's replies (engine process, window streaming text and plotting) against the bare engine's.

Target: app TPOT <= 1.03 x bare TPOT (stretch 1.01), same engine process, model, loop, prompt and
length, interleaved. The bare side is a reply the benchmark sends to the same engine with no window
attached to it: nobody shows its tokens. Both TPOTs come from the engine's own put() stamps.
--breakdown adds app rounds with parts of the window switched off (no live text, no live plots,
neither), interleaved with the others, to show where any cost goes. --frame-intervals 40,50 adds app
rounds with the window's frames that many ms apart instead of gui/frame_interval.py's, interleaved too:
the window's CPU while streaming scales with its frame rate (benchmarks/frame_footprint.py says why).
Run: .venv/bin/python benchmarks/meter_overhead.py [--dtype native] [--loop lean] [--rounds 5] [--tokens 64]
     [--breakdown] [--frame-intervals 40,50]
"""

from __future__ import annotations

import argparse

import _common
from _common import median
from _window_driver import WindowDriver

TARGET = 1.03
STRETCH = 1.01
PROMPT = "Tell me a long story about a lighthouse keeper."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="native")  # the default precision, as a new user gets it
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--loop", default="lean", choices=("lean", "generate"))
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--frame-intervals", default="", help="comma-separated ms: app rounds at other frame rates")
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "meter_overhead")
    driver = WindowDriver(dtype=args.dtype, streaming=True)
    driver.window.chat_panel.settings_panel.decode_loop_box.setCurrentText(args.loop)
    bare, app, window_share = [], [], []
    variants = breakdown_variants(driver.window) if args.breakdown else {}
    for interval_ms in (int(value) for value in args.frame_intervals.split(",") if value.strip()):
        variants[f"frames {interval_ms} ms apart ({1000 / interval_ms:.0f} Hz)"] = frame_interval_variant(
            driver.window, interval_ms
        )
    partial = {name: [] for name in variants}
    partial_share: dict[str, list[float]] = {name: [] for name in variants}

    driver.bare_tpot(PROMPT, 4, args.loop)  # warm-up, both sides
    driver.ask(PROMPT, 4)
    for _ in range(args.rounds):
        bare.append(driver.bare_tpot(PROMPT, args.tokens, args.loop))
        driver.new_chat()  # the same one-turn prompt each time
        trace = driver.ask(PROMPT, args.tokens)
        assert trace.output_tokens == args.tokens
        app.append(trace.metrics().tpot_s)
        if trace.window_cpu_share is not None:
            window_share.append(trace.window_cpu_share)
        for name, switch_off in variants.items():
            with switch_off():
                driver.new_chat()
                trace = driver.ask(PROMPT, args.tokens)
                partial[name].append(trace.metrics().tpot_s)
                if trace.window_cpu_share is not None:
                    partial_share[name].append(trace.window_cpu_share)
    gui_rss_mb = _gui_rss_mb()
    size = driver.window.size()
    driver.close()
    ratio = median(app) / median(bare)
    print(
        f"model: the embedded one ({args.dtype}) in the engine process; {args.loop} loop; {args.rounds} interleaved "
        f"rounds of {args.tokens} tokens; window {size.width()} x {size.height()}; window process RSS {gui_rss_mb:.0f} MB"
    )
    print(
        f"bare {args.loop} TPOT: median {median(bare) * 1000:.2f} ms  (rounds: "
        + ", ".join(f"{v * 1000:.1f}" for v in bare)
        + ")"
    )
    print(
        f"app pipeline TPOT:  median {median(app) * 1000:.2f} ms  (rounds: "
        + ", ".join(f"{v * 1000:.1f}" for v in app)
        + ")"
    )
    if window_share:
        print(
            f"the window's own CPU while streaming (its GUI thread, the meter's card): median "
            f"{median(window_share):.3f} of a core (target <= 0.05)"
        )
        report.figure("window_cpu_share", median(window_share), "<= 0.05", median(window_share) <= 0.05)
    for name, values in partial.items():
        share = f", window CPU {median(partial_share[name]):.3f} of a core" if partial_share[name] else ""
        print(
            f"  app with {name}: median {median(values) * 1000:.2f} ms, ratio {median(values) / median(bare):.3f}"
            + share
        )
    print(
        f"ratio app / bare {args.loop} = {ratio:.3f} (target <= {TARGET}): {'MET' if ratio <= TARGET else 'NOT MET'}; "
        f"stretch <= {STRETCH}: {'MET' if ratio <= STRETCH else 'NOT MET'}"
    )
    report.figure("app_over_bare_tpot", ratio, f"<= {TARGET}", ratio <= TARGET)
    report.figure("bare_tpot_ms", median(bare) * 1000)
    report.figure("app_tpot_ms", median(app) * 1000)


def _gui_rss_mb() -> float:
    """The window process's resident memory: the weights live in the engine process only."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096 / 1e6


def breakdown_variants(window) -> dict:
    """Context managers that switch parts of the window's per-reply work off for one reply.

    Only the methods the frame applies are replaced, not the slots themselves: the engine's events,
    the trace and the stamps run as always.
    """
    from contextlib import ExitStack, contextmanager

    @contextmanager
    def without(*parts):
        with ExitStack() as stack:
            for owner, name in parts:
                original = getattr(owner, name)
                setattr(owner, name, lambda *args, **kwargs: None)
                stack.callback(setattr, owner, name, original)
            yield

    text = (window.chat_panel.transcript, "append_reply_text")
    plots = (window.meter, "refresh")
    return {
        "no live text": lambda: without(text),
        "no live plots": lambda: without(plots),
        "neither (signals, trace and frame timer only)": lambda: without(text, plots),
    }


def frame_interval_variant(window, interval_ms: int):
    """A context manager that runs the window's live frames interval_ms apart for one reply."""
    from contextlib import contextmanager

    timer = window.live.frame_timer

    @contextmanager
    def frames_apart():
        usual = timer.interval()
        timer.setInterval(interval_ms)
        try:
            yield
        finally:
            timer.setInterval(usual)

    return frames_apart


if __name__ == "__main__":
    main()
