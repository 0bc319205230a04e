"""Load one GGUF in a fresh process, ours or llama.cpp's, and print its load seconds and peak RSS as JSON.

A fresh process per load, because peak RSS is a process's high-water mark. Run by quant_table.py.
Usage: python _load_probe.py ours|llama PATH
"""

from __future__ import annotations

import json
import os
import sys
import time

import _common

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    engine, path = sys.argv[1], sys.argv[2]
    if engine == "ours":
        import torch  # noqa: F401  (imports are not load time: the app has them before a load too)
        import transformers  # noqa: F401

        before = _common.high_water_bytes()
        started = time.perf_counter()
        _common.load_as_the_app(path)
    else:
        import llama_cpp

        before = _common.high_water_bytes()
        started = time.perf_counter()
        llama_cpp.Llama(path, n_ctx=512, verbose=False, n_threads=2)
    seconds = time.perf_counter() - started
    peak = _common.high_water_bytes()
    print(json.dumps({"load_s": seconds, "peak_rss_bytes": peak, "rss_before_load_bytes": before}))


if __name__ == "__main__":
    main()
