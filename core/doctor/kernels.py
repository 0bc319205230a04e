"""Which kernels and GEMM precision this CPU gets: its flags, the C kernels' build (core/kernels/build.py) and the
precision a prompt's products run in for the chosen dtype."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.doctor.check import INFO, OK, WARN, Check

SHOWN_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
# csrc/quants.h: the AVX-512 dot products are compiled where all of these are (LL_AVX512_DOTS).
AVX512_DOTS = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"}
BF16_INSTRUCTIONS = ("amx_bf16", "avx512_bf16")


def kernel_isa(flags: set[str]) -> str:
    """What ll_kernel_isa() reports once -march=native compiles the kernels here (csrc/dots_avx2.c)."""
    if not {"avx2", "fma", "f16c"} <= flags:
        return "scalar"
    if flags >= AVX512_DOTS:
        return "avx512 vnni"
    return "avx2 kernels (avx512 machine)" if "avx512f" in flags else "avx2"


def prompt_precision(dtype: str, flags: set[str], isa: str, amx: bool | None = None) -> str:
    """The precision and instructions a prompt's matrix products run in, for a model loaded as `dtype`. amx: whether
    the built kernels run prompts on AMX's tiles (their own answer, ll_use_amx); None where they were not loaded."""
    if dtype == "native":
        if isa == "scalar":
            return "the file's quants through torch's int4 kernel where it covers the file, else float32"
        if amx:
            return "int8: the file's quants times int8 activations, on AMX tiles (tdpbusd)"
        instruction = "vpdpbusd" if "avx512" in isa and "vnni" in isa else "maddubs + madd"
        if amx is None and "amx_int8" in flags:
            instruction += "; on AMX tiles once the kernels are built, where the OS grants them"
        return f"int8: the file's quants times int8 activations ({instruction})"
    if dtype == "bfloat16":
        native = next((flag for flag in BF16_INSTRUCTIONS if flag in flags), None)
        return (
            f"bfloat16 GEMM on {native} (oneDNN)"
            if native
            else "bfloat16 GEMM without bfloat16 instructions (converted to float32 on the fly)"
        )
    if dtype == "float32":
        vector = "avx512f" if "avx512f" in flags else "avx2 + fma" if {"avx2", "fma"} <= flags else "scalar/SSE"
        return f"float32 GEMM ({vector}, oneDNN/MKL)"
    return f"{dtype} weights through torch's quantised linear layers"


def kernels_check(
    flags: Iterable[str],
    dtype: str,
    built: bool,
    compiler: bool,
    loaded_isa: str | None = None,
    types_without_kernel: Iterable[str] = (),
    amx: bool | None = None,
    widened: Mapping[str, str] | None = None,
) -> Check:
    """built: a whole build of the kernels is cached for this CPU; compiler: one is there to build them; loaded_isa:
    the built library's own word for its ISA, where it was loaded; types_without_kernel: the model's tensor types the
    kernels do not multiply (dequantised to float16 at load); amx: whether that library runs prompts on AMX's tiles;
    widened: the model's tensor types the kernels copy exactly into a wider type of theirs at load, and which."""
    flags = set(flags)
    isa = loaded_isa or kernel_isa(flags)
    fallbacks = sorted(set(types_without_kernel))
    present = [flag for flag in SHOWN_FLAGS if flag in flags]
    value = {
        "flags": present,
        "kernel_isa": isa,
        "kernels_built": built,
        "compiler": compiler,
        "dtype": dtype,
        "prompt_gemm": prompt_precision(dtype, flags, isa, amx),
        "types_without_kernel": fallbacks,
        "types_widened": dict(sorted((widened or {}).items())),
    }
    state = "built" if built else "not built yet" if compiler else "not built, no compiler"
    figure = (
        f"{', '.join(present) or 'none of ' + '/'.join(SHOWN_FLAGS[:3])}; C kernels: {isa} ({state}); "
        f"prompt GEMM: {value['prompt_gemm']}"
    )
    if isa == "scalar":
        return Check(
            "kernels",
            figure,
            value,
            WARN,
            "this CPU lacks AVX2 with FMA and F16C, so the C kernels would be plain C (about 11x slower): a GGUF "
            "runs on torch instead; expect a fraction of the speed of a newer x86 machine",
        )
    if dtype == "native" and not (built or compiler):
        return Check(
            "kernels",
            figure,
            value,
            WARN,
            "no C compiler (cc, gcc or clang) to build the kernels: install one (e.g. apt install gcc), or a GGUF "
            "runs on torch's slower path",
        )
    if dtype == "bfloat16" and not any(flag in flags for flag in BF16_INSTRUCTIONS):
        return Check(
            "kernels",
            figure,
            value,
            WARN,
            "this CPU has no bfloat16 instructions, so bfloat16 runs slower than it should: use --dtype native "
            "(the GGUF's own quants) or float32",
        )
    if dtype == "native" and fallbacks:
        return Check(
            "kernels",
            figure,
            value,
            INFO,
            f"the model's {', '.join(fallbacks)} tensors have no kernel and run dequantised to float16 (more bytes a "
            f"token): a Q4_K_M, Q4_0 or Q8_0 file of it runs wholly on the kernels",
        )
    if dtype == "native" and widened:
        return Check(
            "kernels",
            figure,
            value,
            INFO,
            "the model's "
            + ", ".join(f"{name} tensors run widened to {wide}" for name, wide in sorted(widened.items()))
            + " (the same values in more bytes a token: no kernel of their own yet)",
        )
    if dtype == "native" and not built:
        return Check("kernels", figure, value, INFO, "the first load compiles the kernels for this CPU (once)")
    return Check("kernels", figure, value, OK)
