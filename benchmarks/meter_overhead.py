"""TPOT through the whole app (streamer, stamps, worker thread, Qt signals, plots) against bare generate.

Target: app TPOT <= 1.03 x bare model.generate TPOT (no streamer), same prompt and settings, interleaved.
The app decodes on its lean loop by default (core/decode); the fair bare run for that is the same
loop with no streamer, so --loop picks the loop for both sides. bare generate() is printed as well.
--breakdown adds app rounds with parts of the window switched off (no live text, no live plots,
neither), interleaved with the others, to show where the cost goes.
Run: .venv/bin/python benchmarks/meter_overhead.py [--dtype int4] [--loop lean] [--rounds 5] [--tokens 64] [--breakdown]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401
from _common import bare_tpot, median
from _window_driver import WindowDriver

from core.chats.session import ChatSession
from core.model.loader import load_model

TARGET = 1.03
PROMPT = "Tell me a long story about a lighthouse keeper."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="int4")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--loop", default="lean", choices=("lean", "generate"))
    parser.add_argument("--breakdown", action="store_true")
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, 'meter_overhead')
    import torch

    loaded = load_model(None, dtype=args.dtype)
    session = ChatSession()
    session.add_user(PROMPT)
    prompt_ids = torch.tensor([session.build_prompt(loaded.tokenizer, loaded.context_window, args.tokens).input_ids])
    driver = WindowDriver(loaded, streaming=True)
    driver.window.settings_panel.decode_loop_box.setCurrentText(args.loop)
    bare, app, bare_generate = [], [], []
    variants = breakdown_variants(driver.window) if args.breakdown else {}
    partial = {name: [] for name in variants}

    driver.call_on_generation_thread(lambda: bare_tpot(loaded.model, prompt_ids, 4, args.loop))
    driver.ask(PROMPT, 4)
    for _ in range(args.rounds):
        bare.append(driver.call_on_generation_thread(lambda: bare_tpot(loaded.model, prompt_ids, args.tokens,
                                                                       args.loop)))
        if args.loop != "generate":
            bare_generate.append(driver.call_on_generation_thread(
                lambda: bare_tpot(loaded.model, prompt_ids, args.tokens, "generate")))
        driver.new_chat()  # the same one-turn prompt each time
        trace = driver.ask(PROMPT, args.tokens)
        assert trace.output_tokens == args.tokens and trace.prompt_tokens == prompt_ids.shape[1]
        app.append(trace.metrics().tpot_s)
        for name, switch_off in variants.items():
            with switch_off():
                driver.new_chat()
                partial[name].append(driver.ask(PROMPT, args.tokens).metrics().tpot_s)
    driver.close()
    ratio = median(app) / median(bare)
    print(f"model {loaded.name} ({args.dtype}); {args.loop} loop; {args.rounds} interleaved rounds of "
          f"{args.tokens} tokens")
    print(f"bare {args.loop} TPOT: median {median(bare) * 1000:.2f} ms  (rounds: "
          + ", ".join(f"{v * 1000:.1f}" for v in bare) + ")")
    print(f"app pipeline TPOT:  median {median(app) * 1000:.2f} ms  (rounds: "
          + ", ".join(f"{v * 1000:.1f}" for v in app) + ")")
    if bare_generate:
        print(f"bare generate() TPOT: median {median(bare_generate) * 1000:.2f} ms: the app on the {args.loop} loop "
              f"is {median(bare_generate) / median(app):.2f}x as fast as bare generate()")
    for name, values in partial.items():
        print(f"  app with {name}: median {median(values) * 1000:.2f} ms, ratio {median(values) / median(bare):.3f}")
    print(f"ratio app / bare {args.loop} = {ratio:.3f} (target <= {TARGET}): {'MET' if ratio <= TARGET else 'NOT MET'}")
    report.figure("app_over_bare_tpot", ratio, f"<= {TARGET}", ratio <= TARGET)
    report.figure("bare_tpot_ms", median(bare) * 1000)
    report.figure("app_tpot_ms", median(app) * 1000)


def breakdown_variants(window) -> dict:
    """Context managers that switch parts of the window's per-reply work off for one reply.

    Only the methods the token slot and the frame timer call are replaced, not the slots themselves:
    the worker's signals, the trace and the stamps run as always.
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

    text = (window.transcript, "append_reply_text")
    plots = (window.meter, "refresh")
    return {"no live text": lambda: without(text), "no live plots": lambda: without(plots),
            "neither (signals, trace and frame timer only)": lambda: without(text, plots)}


if __name__ == "__main__":
    main()
