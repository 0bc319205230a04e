"""Compile the C kernels once per machine into the user cache, for this CPU's own instruction set.

The library is built with -march=native, so an AVX2-only laptop and an AVX-512 server each get code for
what they have; the cache key holds the CPU's flags and the sources, so a changed CPU (a shared home
folder) or source builds anew. It links OpenMP's libgomp.so.1 by name: torch's own copy is loaded first
(core/kernels/library.py), so torch and the kernels share one thread pool (one_pool.py shows what a second pool
costs).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from core.cache_paths import cache_root
from core.cpu import cpu_flags, cpu_key

SOURCE_DIR = Path(__file__).with_name("csrc")
NATIVE_FLAGS = ("-O3", "-march=native", "-mtune=native")
# For tests of the scalar reference path, and CPUs gcc cannot name: the compiler's plain baseline.
PORTABLE_FLAGS = ("-O2",)
# For tests, on an AVX-512 machine, of the AVX2 code that AVX2-only CPUs run.
AVX2_FLAGS = ("-O3", "-march=haswell", "-mtune=native")
VARIANT_FLAGS = {"native": NATIVE_FLAGS, "portable": PORTABLE_FLAGS, "avx2": AVX2_FLAGS}
# -fvisibility=hidden: only the functions csrc/api.h marks LL_API are exported (what library.py binds).
# -ffp-contract=off: no multiply and add fused but those written as fmaf (quants.c's canonical dots); -std=c11 implies
# it with gcc, and clang would fuse otherwise. -Wall -Wextra: the sources compile without a warning (tested).
COMMON_FLAGS = (
    "-fopenmp",
    "-shared",
    "-fPIC",
    "-std=c11",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fvisibility=hidden",
    "-Wall",
    "-Wextra",
)
# A test build: LATENCYLAB_KERNELS_SANITIZE=address compiles with AddressSanitizer (the process must preload
# libasan; tests/kernels/test_asan.py runs the kernel tests so).
SANITIZE_ENV = "LATENCYLAB_KERNELS_SANITIZE"
# -O1 comes last, so it wins: with AddressSanitizer, -O3 took several times as long to compile.
SANITIZER_FLAGS: dict[str, tuple[str, ...]] = {
    "address": ("-O1", "-fsanitize=address", "-fno-omit-frame-pointer", "-g")
}
COMPILE_TIMEOUT_S = 300
CHECKSUM_SUFFIX = ".sha256"


class KernelsUnavailable(Exception):
    """The kernels cannot be built or loaded here; the message says why, in one line."""


@dataclass(frozen=True)
class BuiltLibrary:
    path: Path
    compiled_now: bool
    note: str | None = None  # said to the user: e.g. built in a temporary folder, the cache being unwritable
    temporary: bool = False  # in a folder of its own, removed once the library is loaded


def compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def sanitizer() -> str | None:
    """The sanitizer a test run asked for (SANITIZE_ENV), or None for the ordinary build."""
    wanted = os.environ.get(SANITIZE_ENV) or None
    if wanted is not None and wanted not in SANITIZER_FLAGS:
        raise KernelsUnavailable(
            f"{SANITIZE_ENV}={wanted}: the kernels know the sanitizers {', '.join(SANITIZER_FLAGS)}"
        )
    return wanted


def variant_name(portable: bool | str) -> str:
    """portable: False (this CPU's native build), True (the scalar one), or a variant name ("avx2")."""
    if isinstance(portable, str):
        if portable not in VARIANT_FLAGS:
            raise ValueError(f"unknown kernel build {portable!r}")
        return portable
    return "portable" if portable else "native"


def _flags(portable: bool | str) -> tuple[str, ...]:
    wanted = sanitizer()
    extra = SANITIZER_FLAGS.get(wanted, ()) if wanted else ()
    return VARIANT_FLAGS[variant_name(portable)] + COMMON_FLAGS + extra


def library_path(portable: bool | str = False) -> Path:
    """Where this machine's build of the current sources lives (or will).

    Keyed by what decides the code (sources, flags, this CPU), not the compiler: a library built once
    still loads after the compiler is gone.
    """
    key = hashlib.sha256()
    for part in (" ".join(_flags(portable)), cpu_key()):
        key.update(part.encode() + b"\0")
    for path in sorted(SOURCE_DIR.glob("*.c")) + sorted(SOURCE_DIR.glob("*.h")):
        key.update(path.name.encode() + b"\0" + path.read_bytes())
    variant = variant_name(portable) + (f"-{sanitizer()}" if sanitizer() else "")
    return cache_root() / "kernels" / f"liblatencylab-{variant}-{key.hexdigest()[:16]}.so"


def checksum_path(library: Path) -> Path:
    """The SHA-256 written beside a library when it is built: a library is loaded only if it still matches."""
    return library.with_name(library.name + CHECKSUM_SUFFIX)


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def verified(library: Path) -> bool:
    """Whether the library is whole: a truncated one mapped into the process gives SIGBUS (on every launch, as
    it stays cached), and an empty or garbled one fails to load. Both fail this check and are built anew."""
    return _damage(library) is None


def _damage(library: Path) -> str | None:
    """What is wrong with the cached library, or None. Only regular files are read, the checksum at most 1 kB of it: a
    FIFO there blocked every launch, and a link to /dev/zero read until memory ran out."""
    from core.bounded_read import NotReadable, kind_of, read_regular_file_and_status

    try:
        mode = os.lstat(library).st_mode
        if not stat.S_ISREG(mode):
            return f"the library is {kind_of(mode)}"
        recorded = read_regular_file_and_status(checksum_path(library), 1024)[0].decode("ascii", "replace")
        whole = recorded.strip() == _sha256(library)
    except NotReadable as refused:
        return f"its checksum file: {refused}"
    except OSError as error:
        return error.strerror or type(error).__name__
    return None if whole else "it does not match the SHA-256 written when it was built"


def can_build() -> bool:
    """Whether build_library will succeed without trying it: a build is here already, or a compiler is."""
    return verified(library_path()) or compiler() is not None


def fast_here() -> bool:
    """Whether -march=native gives the kernels their SIMD code here (AVX2 with FMA and F16C). Elsewhere (ARM,
    older x86) they are plain C, about 11x slower than the AVX2 code, and slower than torch's own kernels."""
    return {"avx2", "fma", "f16c"} <= set(cpu_flags())


def build_library(portable: bool | str = False, progress=None) -> BuiltLibrary:
    """The compiled library's path, building it first if this machine has no whole one for these sources.

    Where the cache cannot be written (read-only, or a file where its folder should be), the library is built into
    a temporary folder for this run, and the returned note says so.
    """
    target = library_path(portable)
    damage = _damage(target)
    if damage is None:
        return BuiltLibrary(target, False)
    if os.path.lexists(target):  # there, but not whole: out of the way of the new build, and said once
        from core.cache_file import set_aside

        set_aside(target, "cached kernel library", damage, "it is compiled again now")
        checksum = checksum_path(target)
        if checksum.is_dir() and not checksum.is_symlink():  # a folder there would block the new checksum's rename
            set_aside(checksum, "kernel library's checksum", damage, "it is written again now")
    cc = compiler()
    if cc is None:
        raise KernelsUnavailable("no C compiler (cc, gcc or clang) was found to build the native GGUF kernels")
    if progress is not None:
        progress(0.0, "first launch: compiling the GGUF kernels for this CPU (once)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _compile(cc, portable, target)
        return BuiltLibrary(target, True)
    except OSError as error:
        folder = Path(tempfile.mkdtemp(prefix="latencylab-kernels-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        scratch = folder / target.name
        _compile(cc, portable, scratch)
        reason = error.strerror or type(error).__name__
        return BuiltLibrary(
            scratch,
            True,
            f"the kernels' cache ({target.parent}) cannot be written ({reason}), so "
            "they were compiled into a temporary folder for this run",
            temporary=True,
        )


def _compile(cc: str, portable: bool | str, target: Path) -> None:
    """Compile into a staging file beside target, write its checksum, then rename it into place (atomic: another
    process sees the whole library or none). OSError when the folder cannot be written."""
    folder = target.parent
    remove_stale_leftovers(folder)
    handle, staging = tempfile.mkstemp(prefix=".building-", suffix=".so", dir=folder)
    os.close(handle)
    objects = tempfile.mkdtemp(prefix=".objects-", dir=folder)
    flags = _flags(portable)
    sources = sorted(SOURCE_DIR.glob("*.c"))
    compile_flags = [flag for flag in flags if flag != "-shared"]
    # Each source on its own core: the two dot-product files take most of the time, and take it together.
    outputs = [os.path.join(objects, source.stem + ".o") for source in sources]
    commands = [[cc, *compile_flags, "-c", "-o", output, str(source)] for output, source in zip(outputs, sources)]
    commands.append([cc, *flags, "-o", staging, *outputs, "-lm"])
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
            compiled = list(pool.map(_run, commands[:-1]))
        linked = [_run(commands[-1])] if all(result.returncode == 0 for result in compiled) else []
        failed = next((result for result in compiled + linked if result.returncode != 0), None)
        if failed is not None:
            detail = (failed.stderr.strip().splitlines() or ["no output"])[-1]
            raise KernelsUnavailable(f"compiling the native GGUF kernels failed ({Path(cc).name}: {detail[:200]})")
        checksum = checksum_path(target)
        staged_checksum = checksum.with_name(Path(staging).name + CHECKSUM_SUFFIX)
        staged_checksum.write_text(_sha256(Path(staging)) + "\n")
        os.replace(staged_checksum, checksum)
        os.replace(staging, target)
    except subprocess.TimeoutExpired:
        raise KernelsUnavailable(f"compiling the native GGUF kernels took over {COMPILE_TIMEOUT_S} s") from None
    finally:
        for leftover in (staging, staging + CHECKSUM_SUFFIX):
            if os.path.exists(leftover):
                os.unlink(leftover)
        shutil.rmtree(objects, ignore_errors=True)


LEFTOVER_PREFIXES = (".building-", ".objects-")


def remove_stale_leftovers(folder: Path, now: float | None = None) -> None:
    """Remove the staging files and object folders of builds that can no longer be running (older than a build may
    take): Ctrl+C during a build ends the process with os._exit (cli/exit_paths.py), and _compile's cleanup never
    runs. A build in progress in another process is younger, and left alone."""
    now = time.time() if now is None else now
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(LEFTOVER_PREFIXES):
            continue
        try:
            if now - entry.lstat().st_mtime <= 2 * COMPILE_TIMEOUT_S:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink()
        except OSError:
            continue


def _run(command: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except OSError as error:  # the compiler itself could not be run: not the folder's fault
        raise KernelsUnavailable(f"the C compiler {command[0]} could not be run: {error.strerror or error}") from None
