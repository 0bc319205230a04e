"""The embedded model requantised by llama.cpp's own quantiser into the GGUF types people download.

Test data and benchmark input, made here since nothing may be downloaded. Each file is cached in the
user's cache folder under the source's hash and the type, so the suite makes it once per machine.
Run `python tools/quant_files.py` to (re)make them all; it needs llama-cpp-python (tools/llama_cpp_builds.py).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

# The file types of issue #16. The model is 576 wide, not a multiple of 256, so llama.cpp falls back
# for most tensors: a "Q4_K_M" file holds Q5_0, Q8_0, Q4_K and Q6_K tensors, a realistic mix.
FILE_TYPES = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0", "Q5_0", "Q5_1")
# Every quant type the files above hold, with the embedded file's own Q4_1.
TENSOR_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K")


def _cache_root() -> Path:
    from core.cache_paths import cache_root

    return cache_root() / "quant-test-files"


def _source_digest(source: Path) -> str:
    digest = hashlib.sha256()
    with open(source, "rb") as handle:
        while chunk := handle.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def quant_file(file_type: str, source: Path | None = None) -> Path:
    """The embedded model as file_type (e.g. "Q4_K_M"), made by llama.cpp on first use and then cached."""
    from core.model.source import embedded_gguf_path

    source = Path(source or embedded_gguf_path())
    if file_type == "Q4_1" and source == embedded_gguf_path():
        return source  # the embedded file is Q4_1 already
    target = _cache_root() / f"{source.stem}-{_source_digest(source)}-{file_type}.gguf"
    if target.is_file():
        return target
    import llama_cpp

    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=".making-", suffix=".gguf", dir=target.parent)
    os.close(handle)
    try:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{file_type}")
        params.allow_requantize = True  # the source is Q4_1 already
        params.nthread = min(4, os.cpu_count() or 1)
        status = llama_cpp.llama_model_quantize(str(source).encode(), staging.encode(), params)
        if status != 0:
            raise RuntimeError(f"llama.cpp could not quantise {source.name} to {file_type} (status {status})")
        os.replace(staging, target)  # in one step: a reader sees no file or a whole one
    finally:
        if os.path.exists(staging):
            os.remove(staging)
    return target


# llama.cpp's own variations of the same computation: the reference (its default batched pass) and three others.
LLAMA_CPP_VARIANTS = {
    "batched": {},
    "token by token": {"n_batch": 1, "n_ubatch": 1},
    "float32 KV cache": {"type_k": 0, "type_v": 0},
    "flash attention": {"flash_attn": True},
}
TOP = 16  # logits kept per position of the batched pass: a token further down is no near tie


def llama_cpp_reference(path: Path, ids: list[int]) -> dict:
    """llama.cpp's teacher-forced answers over ids on this file: each variant's top-1 per position ("top1 NAME"), the
    batched pass's TOP best token ids per position ("top ids"), and each variant's logits for those ids ("top logits
    NAME"): how far its own variants move the logits that matter.

    Computed once per file, text, CPU and llama.cpp build (tools/llama_cpp_builds.py keys the build by the
    CPU's flags and the build flags), then kept beside the file: four llama.cpp passes per file were most of the
    quant-file tests' time.
    """
    import numpy as np

    from tools.llama_cpp_builds import recipe

    text_key = hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).hexdigest()[:12]
    target = path.with_name(f"{path.stem}.llama-cpp-{recipe().key}-{text_key}-top{TOP}-all.npz")
    if target.is_file():
        with np.load(target) as saved:
            return {key: saved[key] for key in saved.files}
    import llama_cpp

    found = {}
    for name, options in LLAMA_CPP_VARIANTS.items():
        reference = llama_cpp.Llama(str(path), n_ctx=1024, logits_all=True, verbose=False, n_threads=2, **options)
        reference.eval(ids)
        logits = np.asarray(reference.scores[: len(ids)])
        del reference
        found[f"top1 {name}"] = logits.argmax(-1)
        if name == "batched":  # the first: the others' logits are kept for its best ids
            found["top ids"] = np.argsort(-logits, axis=-1)[:, :TOP]
        found[f"top logits {name}"] = np.take_along_axis(logits, found["top ids"], axis=-1)
    handle, staging = tempfile.mkstemp(prefix=".making-", suffix=".npz", dir=target.parent)
    os.close(handle)
    try:
        np.savez(staging, **found)
        os.replace(staging, target)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
    return found


def main() -> None:
    for file_type in FILE_TYPES:
        path = quant_file(file_type)
        print(f"{file_type:<8}{path.stat().st_size / 1e6:>8.1f} MB  {path}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
