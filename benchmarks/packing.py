"""What packing a quant type's matrices at load buys: the same GGUF loaded twice, one copy with the type packed 16 rows
a group (csrc/quants.h) and one in the file's layout, decode steps and prompt passes interleaved.

Both copies give the same bits (tests/kernels/test_batch_invariance.py); only their speed differs. The type is packed
where this build has a layout for it; run it per type to see what each layout gives on this CPU.
Run: .venv/bin/python benchmarks/packing.py --model FILE.gguf [--type Q6_K] [--steps 150] [--prompt 512] [--threads 2]
     [--kernels native|avx2]
"""

from __future__ import annotations

import argparse
import time

import _common
from _common import median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a GGUF file the C kernels run")
    parser.add_argument("--type", default="Q6_K", help="the quant type left in the file's layout in one copy")
    parser.add_argument("--steps", type=int, default=150, help="decode steps each copy, interleaved")
    parser.add_argument("--prompt", type=int, default=512, help="tokens of a prompt pass (0: none)")
    parser.add_argument("--threads", type=int, default=2)
    _common.add_kernels_option(parser)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "packing")
    import torch

    from core.compute_thread import on_compute_thread
    from core.generation.decode.kernel_decoder import KernelDecoder
    from core.kernels.kernel_model import KernelModel

    _common.use_kernels(args.kernels)
    packed = _common.fully_packed(_common.load_as_the_app(args.model))
    pack = KernelModel.pack
    try:  # the second copy: every matrix of the type stays as the file lays it out
        KernelModel.pack = lambda self, layer, role, threads: (  # type: ignore[method-assign]
            False
            if self.matrices[layer, role][1] == self.library.kernel_types[args.type]
            else pack(self, layer, role, threads)
        )
        unpacked = _common.fully_packed(_common.load_as_the_app(args.model))  # while the type is left out
    finally:
        KernelModel.pack = pack  # type: ignore[method-assign]
    copies = {"packed": packed.model.kernel, "file layout": unpacked.model.kernel}
    difference = len(copies["packed"].packed) - len(copies["file layout"].packed)
    print(
        f"{packed.describe().model}: {difference} {args.type} matrices packed in one copy only; "
        f"{packed.model.kernel.library.isa} kernels, {args.threads} threads"
    )
    if not difference:
        print(f"this build has no packed layout for {args.type}, or the file has no {args.type} matrix")
        return

    def measure() -> dict[str, dict[str, float]]:
        torch.set_num_threads(args.threads)
        decoders = {name: KernelDecoder(kernel) for name, kernel in copies.items()}
        steps: dict[str, list[float]] = {name: [] for name in decoders}
        prompts: dict[str, list[float]] = {name: [] for name in decoders}
        context = 50
        with torch.inference_mode():
            for decoder in decoders.values():
                decoder.start_sequence(context + args.steps + 1)
                decoder.forward(torch.arange(300, 300 + context), 0)
            for step in range(args.steps):  # each copy first every other step
                order = list(decoders.items())
                for name, decoder in order if step % 2 else order[::-1]:
                    started = time.perf_counter()
                    decoder.forward(torch.tensor([400 + step]), context + step)
                    steps[name].append(time.perf_counter() - started)
            for _ in range(3 if args.prompt else 0):
                for name, decoder in decoders.items():
                    decoder.start_sequence(args.prompt + 1)
                    started = time.perf_counter()
                    decoder.forward(torch.tensor([300 + (i * 37) % 30000 for i in range(args.prompt)]), 0)
                    prompts[name].append(time.perf_counter() - started)
        return {
            name: {"step": median(steps[name]), "prompt": min(prompts[name]) if prompts[name] else 0.0}
            for name in decoders
        }

    results = on_compute_thread(measure)
    for name, figures in results.items():
        line = f"  {name:<12} decode step {figures['step'] * 1e3:7.2f} ms (median of {args.steps})"
        if args.prompt:
            line += f", {args.prompt}-token prompt {figures['prompt']:.3f} s (best of 3)"
        print(line)
    ratio = results["packed"]["step"] / results["file layout"]["step"]
    print(f"packed {args.type} step / file layout's: {ratio:.3f}")
    report.figure(f"{args.type} packed step ratio", round(ratio, 4))


if __name__ == "__main__":
    main()
