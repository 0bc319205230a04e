"""The CPU's flags and model name, read from the kernel's list, as every per-CPU build and cache is keyed by them."""

from core.cpu import cpu_flags, cpu_model_name


def test_cpu_flags_are_read_from_the_kernels_list(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nflags\t\t: sse2 avx2 amx_tile fma\n\nprocessor\t: 1\nflags\t\t: sse2 avx2 amx_tile fma\n"
    )
    assert cpu_flags(cpuinfo) == ("amx_tile", "avx2", "fma", "sse2")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd sve\n")
    assert cpu_flags(arm) == ("asimd", "fp", "sve")


def test_the_model_name_is_the_kernels_or_the_platforms(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\nflags\t\t: avx2\n")
    assert cpu_model_name(cpuinfo) == "AMD EPYC 9654 96-Core Processor"
    assert cpu_model_name(tmp_path / "absent")  # another system: the platform's name, never empty
