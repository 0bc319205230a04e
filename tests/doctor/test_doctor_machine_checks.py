"""The doctor's machine checks on crafted inputs: /proc/meminfo, /proc/stat and /proc/PID/stat files, CPU topologies,
OpenMP environments and CPU flags; a missing or garbled file reads as unknown, never a traceback."""

from __future__ import annotations

import pytest

from core.doctor.check import INFO, OK, WARN
from core.doctor.cores import cores_check, physical_cores
from core.doctor.kernels import kernel_isa, kernels_check
from core.doctor.load import BUSY_CORES, OtherLoad, load_check, measure_other_load
from core.doctor.memory import memory_check, read_memory
from core.doctor.openmp import PASSIVE_ON_QUIET, openmp_check
from core.doctor.run import guarded

MEMINFO = """MemTotal:       16000000 kB
MemFree:         1000000 kB
MemAvailable:    8000000 kB
SwapTotal:       2000000 kB
SwapFree:        1500000 kB
Garbled line without figures
HugePages_Total:       0
"""


def test_meminfo_is_read_in_bytes_and_a_garbled_line_is_skipped(tmp_path):
    (tmp_path / "meminfo").write_text(MEMINFO)
    memory = read_memory(tmp_path / "meminfo")
    assert (memory.total, memory.available) == (16_000_000 * 1024, 8_000_000 * 1024)
    assert (memory.swap_total, memory.swap_used) == (2_000_000 * 1024, 500_000 * 1024)
    check = memory_check(memory)
    assert check.status == OK
    assert "8.2 GB available of 16.4 GB" in check.figure and "swap 512 MB used" in check.figure


def test_low_free_memory_warns_and_says_swap_is_in_use(tmp_path):
    (tmp_path / "meminfo").write_text(MEMINFO.replace("MemAvailable:    8000000", "MemAvailable:    800000"))
    check = memory_check(read_memory(tmp_path / "meminfo"))
    assert check.status == WARN
    assert "only 5% of memory is free and swap is in use" in check.advice


def test_a_missing_meminfo_is_unknown(tmp_path):
    memory = read_memory(tmp_path / "absent")
    assert memory.available is None and memory.swap_used is None
    check = memory_check(memory)
    assert check.status == INFO and check.figure.startswith("unknown")


def write_stat(folder, busy_ticks: int) -> None:
    # user nice system idle iowait irq softirq steal: busy = user + nice + system + irq + softirq + steal
    (folder / "stat").write_text(f"cpu  {busy_ticks} 0 0 99999 0 0 0 0 0 0\ncpu0 1 2 3 4\n")


def write_process(proc, pid: int, name: str, ticks: int) -> None:
    (proc / str(pid)).mkdir(exist_ok=True)
    # A name may hold spaces and parentheses; utime and stime are fields 14 and 15.
    rest = " ".join(["S"] + ["0"] * 10 + [str(ticks), "0"] + ["0"] * 30)
    (proc / str(pid) / "stat").write_text(f"{pid} ({name}) {rest}\n")


def test_other_load_and_its_busiest_processes_from_crafted_proc_files(tmp_path):
    """Between the two readings, 150 ticks of the machine's busy time (1.5 cores over a 1 s probe, at 100 ticks/s),
    120 of them one process's: the figure and the top process are those."""
    import os

    ticks = os.sysconf("SC_CLK_TCK")
    proc = tmp_path
    write_stat(proc, 1000)
    write_process(proc, 4242, "busy (worker)", 500)
    write_process(proc, 4343, "idle", 10)
    now = [100.0]

    def sleep(seconds: float) -> None:  # what the machine did while the doctor slept
        write_stat(proc, 1000 + int(1.5 * ticks))
        write_process(proc, 4242, "busy (worker)", 500 + int(1.2 * ticks))
        now[0] += seconds

    load = measure_other_load(
        1.0, stat=proc / "stat", proc=proc, sleep=sleep, clock=lambda: now[0], own_busy=lambda: 0.0
    )
    assert load.others_cores == pytest.approx(1.5)
    assert [(name, pid) for name, pid, _ in load.top] == [("busy (worker)", 4242)]
    assert load.top[0][2] == pytest.approx(1.2)
    check = load_check(load, usable=2, threads=2)
    assert check.status == WARN
    assert "other programs used 1.50 cores of 2 over 1.0 s: busy (worker) (pid 4242) 1.20" in check.figure
    assert "close or pause busy (worker)" in check.advice


def test_load_below_the_limit_is_ok_and_spare_cores_may_be_used_first():
    assert load_check(OtherLoad(BUSY_CORES / 2, 0.5), usable=2, threads=2).status == OK
    # One core the engine does not compute on: another program may use it without slowing a reply.
    assert load_check(OtherLoad(1.0, 0.5), usable=4, threads=3).status == OK
    assert load_check(OtherLoad(1.0 + 2 * BUSY_CORES, 0.5), usable=4, threads=3).status == WARN


def test_unreadable_proc_files_make_the_load_unknown(tmp_path):
    load = measure_other_load(0.01, stat=tmp_path / "absent", proc=tmp_path / "absent-proc")
    assert load.others_cores is None and load.top == []
    check = load_check(load, usable=2, threads=2)
    assert check.status == INFO and check.figure.startswith("unknown")


def test_physical_cores_count_hyperthread_siblings_once(tmp_path):
    for cpu, siblings in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}.items():
        (tmp_path / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(siblings + "\n")
    assert physical_cores({0, 1, 2, 3}, tmp_path) == 2
    assert physical_cores({0, 1, 2, 3, 4}, tmp_path) is None  # cpu4's topology is unreadable: unknown, not a guess


def test_threads_against_cores():
    more = cores_check({0, 1}, threads=4, physical=2, logical=2)
    assert more.status == WARN and "OMP_NUM_THREADS=2" in more.advice
    fewer = cores_check({0, 1, 2, 3}, threads=2, physical=4, logical=4)
    assert fewer.status == INFO and "uses 2 of 4 cores" in fewer.advice
    matched = cores_check({0, 1, 2, 3}, threads=2, physical=2, logical=8)
    assert matched.status == OK
    assert matched.figure == "4 usable of 8 (2 physical) CPUs; the engine computes with 2 threads"


def test_openmp_settings():
    assert openmp_check({}, busy=False).status == OK
    assert openmp_check({}, busy=False).figure == "none set (libgomp's defaults)"
    quiet_passive = openmp_check({"OMP_WAIT_POLICY": "passive"}, busy=False)
    assert quiet_passive.status == INFO and quiet_passive.advice == PASSIVE_ON_QUIET
    assert openmp_check({"OMP_WAIT_POLICY": "PASSIVE"}, busy=True).status == OK
    assert openmp_check({"OMP_WAIT_POLICY": "ACTIVE"}, busy=True).status == WARN
    bad = openmp_check({"OMP_NUM_THREADS": "all"}, busy=None)
    assert bad.status == WARN and "'all' is not a positive number" in bad.advice
    assert openmp_check({"OMP_NUM_THREADS": "4"}).figure == "OMP_NUM_THREADS=4"


AVX512 = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16"}


def test_kernel_path_and_gemm_precision_per_cpu():
    assert kernel_isa(AVX512) == "avx512 vnni"
    assert kernel_isa(AVX512 - {"avx512_vnni"}) == "avx2 kernels (avx512 machine)"
    assert kernel_isa({"avx2", "fma", "f16c"}) == "avx2"
    assert kernel_isa({"sse4_2"}) == "scalar"
    native = kernels_check(AVX512, "native", built=True, compiler=True)
    assert native.status == OK and "vpdpbusd" in native.value["prompt_gemm"]
    assert "maddubs" in kernels_check({"avx2", "fma", "f16c"}, "native", True, True).value["prompt_gemm"]
    assert kernels_check({"sse4_2"}, "native", False, True).status == WARN
    assert kernels_check({"avx2", "fma", "f16c"}, "native", built=False, compiler=False).status == WARN
    assert kernels_check({"avx2", "fma", "f16c"}, "native", built=False, compiler=True).status == INFO
    assert kernels_check({"avx2", "fma", "f16c"}, "bfloat16", True, True).status == WARN
    assert "avx512_bf16" in kernels_check(AVX512, "bfloat16", True, True).value["prompt_gemm"]
    fallback = kernels_check(AVX512, "native", True, True, "avx512 vnni", types_without_kernel={"IQ2_XS"})
    assert fallback.status == INFO and "IQ2_XS tensors have no kernel" in fallback.advice
    widened = kernels_check(AVX512, "native", True, True, "avx512 vnni", widened={"Q3_K": "Q6_K"})
    assert widened.status == INFO and "Q3_K tensors run widened to Q6_K" in widened.advice
    assert widened.value["types_widened"] == {"Q3_K": "Q6_K"}
    amx = AVX512 | {"amx_tile", "amx_int8"}
    assert (
        "on AMX tiles (tdpbusd)"
        in kernels_check(amx, "native", True, True, "avx512 vnni", amx=True).value["prompt_gemm"]
    )
    refused = kernels_check(amx, "native", True, True, "avx512 vnni", amx=False).value["prompt_gemm"]  # the OS said no
    assert "vpdpbusd" in refused and "AMX" not in refused
    assert "AMX tiles once the kernels are built" in kernels_check(amx, "native", False, True).value["prompt_gemm"]


@pytest.mark.model
def test_the_doctor_names_the_prompt_path_a_load_runs_here():
    """The doctor said vpdpbusd on an AMX Xeon whose loaded model ran its prompts on AMX's tiles."""
    from core.doctor.run import _kernels
    from core.kernels.library import kernels

    on_tiles = bool(kernels().ll_use_amx(-1))
    said = _kernels(None, "native").value["prompt_gemm"]
    assert ("on AMX tiles (tdpbusd)" in said) == on_tiles, said


def test_the_doctor_names_only_the_types_a_file_runs_without_a_kernel_for():
    """A Q3_K_M file (Q3_K packed in its own layout where the build packs, else widened to Q6_K) is not said to lack
    a kernel; a Q2_K tensor is."""
    from types import SimpleNamespace

    from core.doctor.run import _kernels
    from core.kernels.library import kernels

    library = kernels()  # built, as the doctor asks for a built library only
    figures = SimpleNamespace(kind="gguf", tensor_types=["Q3_K", "Q4_K", "Q6_K", "Q2_K", "F32"])
    check = _kernels(figures, "native")
    assert check.value["types_without_kernel"] == ["Q2_K"]
    assert check.value["types_widened"] == ({} if library.types["Q3_K"].packs else {"Q3_K": "Q6_K"})


def test_a_check_that_fails_reads_as_unknown():
    def broken():
        raise PermissionError("denied")

    (line,) = guarded("memory", broken)
    assert line.name == "memory" and line.status == INFO
    assert line.figure == "unknown (PermissionError: denied)"
