"""fast_decode.py's table per GGUF quant type: native vs float32 vs llama.cpp on the same file.

Decode tok/s of all three interleaved in one run, then load time and peak RSS per file, each load in
a fresh process. Target: native >= 3x float32 for every type; stretch: native >= llama.cpp.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import _common
from _common import bare_tpot, median

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, which the tests share (not the package)
from tools.quant_files import FILE_TYPES, quant_file

TARGET_SPEEDUP = 3.0
PROMPT = "Hello! Please tell me about the sea."


def llama_tpot(llm, prompt_ids: list[int], new_tokens: int) -> float:
    """llama.cpp's seconds per decoded token: greedy steps of one token each after the prompt."""
    import numpy as np

    def next_token() -> int:
        # The last position's logits: llm.scores holds them only with logits_all (it stayed zero, so every step
        # fed token 0).
        return int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))))

    llm.reset()
    llm.eval(prompt_ids)
    token = next_token()
    started = time.perf_counter()
    for _ in range(new_tokens):
        llm.eval([token])
        token = next_token()
    return (time.perf_counter() - started) / new_tokens


def probe_load(engine: str, path: Path) -> dict:
    script = Path(__file__).with_name("_load_probe.py")
    result = subprocess.run(
        [sys.executable, str(script), engine, str(path)], capture_output=True, text=True, timeout=900
    )
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def run(report, rounds: int, tokens: int, file_types: list[str], threads: int) -> None:
    import llama_cpp
    import torch

    from core.compute_thread import on_compute_thread

    on_compute_thread(lambda: torch.set_num_threads(threads))  # replies run on the compute thread

    paths = {file_type: quant_file(file_type) for file_type in file_types}
    models = {}
    for file_type, path in paths.items():
        models[file_type, "native"] = _common.fully_packed(_common.load_as_the_app(str(path)))
        models[file_type, "float32"] = _common.load_as_the_app(str(path), dtype="float32")
        models[file_type, "llama.cpp"] = llama_cpp.Llama(
            str(path), n_ctx=512, verbose=False, n_threads=threads, n_threads_batch=threads
        )
    tokenizer = models[file_types[0], "native"].tokenizer
    prompt_ids = tokenizer(PROMPT)["input_ids"]
    prompt = torch.tensor([prompt_ids])
    runs = list(models)
    tpots = {run: [] for run in runs}

    def measure(run_key, count):
        model = models[run_key]
        if run_key[1] == "llama.cpp":
            return llama_tpot(model, prompt_ids, count)
        return bare_tpot(model.model, prompt, count, "lean")

    for run_key in runs:
        measure(run_key, 4)  # warm-up
    for _ in range(rounds):
        for run_key in runs:  # interleaved, so machine noise hits every run alike
            tpots[run_key].append(measure(run_key, tokens))
    print(
        f"\nPer GGUF quant type (the embedded model requantised by llama.cpp): {rounds} interleaved rounds of "
        f"{tokens} new tokens, lean loop, {threads} thread(s) for torch and for llama.cpp\n"
    )
    print(
        f"{'file':<8}{'native as':<20}{'native':>9}{'float32':>9}{'llama.cpp':>11}{'vs fp32':>9}{'vs llama':>10}"
        f"  target >= {TARGET_SPEEDUP:g}x fp32"
    )
    print(f"{'':<28}{'tok/s':>9}{'tok/s':>9}{'tok/s':>11}")
    met_all = True
    for file_type in file_types:
        tok_s = {engine: 1 / median(tpots[file_type, engine]) for engine in ("native", "float32", "llama.cpp")}
        speedup = tok_s["native"] / tok_s["float32"]
        versus_llama = tok_s["native"] / tok_s["llama.cpp"]
        met = speedup >= TARGET_SPEEDUP
        met_all &= met
        facts = models[file_type, "native"].describe()
        print(
            f"{file_type:<8}{facts.dtype:<20}{tok_s['native']:>9.1f}{tok_s['float32']:>9.1f}"
            f"{tok_s['llama.cpp']:>11.1f}{speedup:>8.2f}x{versus_llama:>9.0%}  "
            f"{'MET' if met else f'NOT MET ({speedup:.2f}x)'}; stretch >= llama.cpp: "
            f"{'MET' if versus_llama >= 1 else 'NOT MET'}"
        )
        report.figure(f"{file_type}_native_tok_s", tok_s["native"])
        report.figure(f"{file_type}_float32_tok_s", tok_s["float32"])
        report.figure(f"{file_type}_llama_cpp_tok_s", tok_s["llama.cpp"])
        report.figure(f"{file_type}_native_over_float32", speedup, f">= {TARGET_SPEEDUP:g}", met)
        report.figure(f"{file_type}_native_over_llama_cpp", versus_llama, ">= 1 (stretch)", versus_llama >= 1)
    print(f"native >= {TARGET_SPEEDUP:g}x float32 for every type: {'MET' if met_all else 'NOT MET'}")
    agreement_table(report, models, file_types, paths)
    models.clear()  # out of memory before the load probes (the closure above shares the dict, so not `del`)
    print(
        "\nLoad of each file in a fresh process (imports excluded; ours: a later load, with the verified "
        "tokenizer cache already made)\n"
    )
    print(
        f"{'file':<8}{'file MB':>9}{'ours s':>8}{'ours peak MB':>14}{'(imports)':>11}{'llama.cpp s':>13}"
        f"{'llama.cpp peak MB':>19}{'(imports)':>11}"
    )
    for file_type, path in paths.items():
        probe_load("ours", path)  # the first load makes the tokenizer cache; the figure is a later load's
        ours, theirs = probe_load("ours", path), probe_load("llama", path)
        if "error" in ours or "error" in theirs:
            print(f"{file_type:<8} load failed: {ours.get('error') or theirs.get('error')}")
            continue
        print(
            f"{file_type:<8}{path.stat().st_size / 1e6:>9.0f}{ours['load_s']:>8.1f}"
            f"{ours['peak_rss_bytes'] / 1e6:>14.0f}{ours['rss_before_load_bytes'] / 1e6:>11.0f}"
            f"{theirs['load_s']:>13.1f}{theirs['peak_rss_bytes'] / 1e6:>19.0f}"
            f"{theirs['rss_before_load_bytes'] / 1e6:>11.0f}"
        )
        report.figure(f"{file_type}_load_s", ours["load_s"])
        report.figure(f"{file_type}_peak_rss_mb", ours["peak_rss_bytes"] / 1e6)
        report.figure(f"{file_type}_llama_cpp_load_s", theirs["load_s"])
        report.figure(f"{file_type}_llama_cpp_peak_rss_mb", theirs["peak_rss_bytes"] / 1e6)
    print("(imports): the process's RSS before the load began, mostly torch and transformers for ours")


def agreement_table(report, models, file_types, paths) -> None:
    """Teacher-forced top-1 over the fixed text: native against llama.cpp's batched pass and against the file's
    exact float32 dequantisation, with float32 against llama.cpp for scale (tests/model/test_quant_files.py asserts
    the llama.cpp side)."""
    import llama_cpp
    import numpy as np

    from core.quant.agreement import agreement_text

    print("\nTop-1 agreement over the fixed text (teacher-forced), the same files\n")
    print(f"{'file':<8}{'tokens':>8}{'native~llama.cpp':>18}{'native~float32':>16}{'float32~llama.cpp':>19}")
    for file_type in file_types:
        native, exact = models[file_type, "native"], models[file_type, "float32"]
        ids = native.tokenizer(agreement_text())["input_ids"]
        ours = native.position_logits(ids).argmax(-1).numpy()
        dequantised = exact.position_logits(ids).argmax(-1).numpy()
        reference = llama_cpp.Llama(str(paths[file_type]), n_ctx=1024, logits_all=True, verbose=False, n_threads=2)
        reference.eval(ids)
        theirs = np.asarray(reference.scores[: len(ids)]).argmax(-1)
        rates = {
            "native_llama_cpp": (ours == theirs).mean(),
            "native_float32": (ours == dequantised).mean(),
            "float32_llama_cpp": (dequantised == theirs).mean(),
        }
        print(
            f"{file_type:<8}{len(ids):>8}{rates['native_llama_cpp']:>18.1%}{rates['native_float32']:>16.1%}"
            f"{rates['float32_llama_cpp']:>19.1%}"
        )
        for name, rate in rates.items():
            report.figure(f"{file_type}_agreement_{name}", float(rate))


def all_file_types() -> list[str]:
    return ["Q4_1", *FILE_TYPES]
