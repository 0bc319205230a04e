"""Every cache file is checked against its schema as it is read: each bad value planted below is set aside (NAME.bad),
measured or built again, and said once; nothing downstream ever sees it."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

import core.kernels.build
import core.roofline.ceilings
from core.cache_file import take_notices
from core.roofline.ceilings import FORMAT, Ceiling, Ceilings, cached_ceilings

# -- the ceilings file ----------------------------------------------------------------------------------------------


def good_ceilings() -> dict:
    rates = {"gemm_float32": ("flop/s", 4.1e11), "gemm_bfloat16": ("flop/s", 1.7e12), "dram": ("byte/s", 1.2e10)}
    return Ceilings(
        {
            name: Ceiling(name, name, unit, value, value * 0.9, 5, "measured", 1e9)
            for name, (unit, value) in rates.items()
        },
        "Test CPU",
        2,
        32 * 2**20,
        "2026-12-03T10:00:00+00:00",
        0.01,
        False,
    ).to_dict()


def _set(path: tuple, value):
    def plant(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return document

    return plant


def _median_text(document, text: str) -> str:
    """The document with DRAM's median written as this text: JSON's own spelling of a number no float holds."""
    return json.dumps(_set(("ceilings", "dram", "median"), 7777777.0)(document)).replace("7777777.0", text)


# (what is planted, how, the words the notice names it by): the values first, then their neighbours.
BAD_CEILINGS = {
    "a ceiling of 0": (_set(("ceilings", "dram", "value"), 0), "ceilings.dram.value must be from 1e+06"),
    "a ceiling as a string": (_set(("ceilings", "dram", "value"), "fast"), "ceilings.dram.value must be a number"),
    "a negative ceiling": (_set(("ceilings", "gemm_float32", "value"), -2e11), "ceilings.gemm_float32.value"),
    "a ceiling of 1e-300": (_set(("ceilings", "gemm_bfloat16", "value"), 1e-300), "ceilings.gemm_bfloat16.value"),
    "a median of 1e400": (lambda document: _median_text(document, "1e400"), "ceilings.dram.median must be from"),
    "a NaN median": (lambda document: _median_text(document, "NaN"), "not JSON"),
    "the cache size as a string": (_set(("last_level_cache_bytes",), "32M"), "last_level_cache_bytes must be a whole"),
    "a negative cache size": (_set(("last_level_cache_bytes",), -1), "last_level_cache_bytes must be from 1"),
    "a list as the document": (lambda document: [document], "the file must be an object, not list"),
    "a string as the document": (lambda document: json.dumps("ceilings"), "the file must be an object, not str"),
    "the ceilings as a list": (_set(("ceilings",), [1, 2]), "ceilings must be an object, not list"),
    "a ceiling that is not one": (_set(("ceilings", "gemm_float16"), {}), "one of gemm_float32"),
    "DRAM in flop/s": (_set(("ceilings", "dram", "unit"), "flop/s"), "ceilings.dram is named 'dram' in flop/s"),
    "no passes": (_set(("ceilings", "dram", "passes"), 0), "ceilings.dram.passes must be from 1"),
    "0 threads": (_set(("threads",), 0), "threads must be from 1"),
    "loaded as text": (_set(("loaded",), "no"), "loaded must be true or false"),
    "a note that is a number": (_set(("notes",), [1]), "notes[0] must be text"),
    "another format": (_set(("format",), FORMAT + 1), f"format must be from {FORMAT} to {FORMAT}"),
    "not JSON": (lambda document: "{not json", "not JSON"),
    "empty": (lambda document: "", "not JSON"),
    "deeply nested": (lambda document: "[" * 100_000 + "]" * 100_000, "not JSON"),
}
# What is at the file's name instead of a file.
ODD_FILES = {
    "a folder": (lambda path: path.mkdir(), "it is a folder, not a regular file"),
    "a FIFO": (lambda path: os.mkfifo(path), "it is a named pipe (FIFO), not a regular file"),
    "a link to /dev/zero": (lambda path: path.symlink_to("/dev/zero"), "it is a symbolic link"),
    "a 2 MB file": (lambda path: path.write_bytes(b" " * 2 * 2**20), "the file is larger than 1 MB"),
}


@pytest.fixture
def ceilings_file(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "roofline" / "ceilings-test.json"
    path.parent.mkdir()
    monkeypatch.setattr(core.roofline.ceilings, "_cache_path", lambda threads: path)
    return path


def plant_ceilings(path: Path, how) -> None:
    planted = how(copy.deepcopy(good_ceilings()))
    path.write_text(planted if isinstance(planted, str) else json.dumps(planted))


def assert_set_aside_and_said_once(path: Path, words: str) -> None:
    notices = take_notices()
    assert len(notices) == 1 and words in notices[0], notices
    assert "\n" not in notices[0] and f"set aside as {path.name}.bad" in notices[0]
    assert not os.path.lexists(path) and os.path.lexists(path.with_name(path.name + ".bad"))


@pytest.mark.parametrize("bad", list(BAD_CEILINGS))
def test_a_bad_value_in_the_ceilings_file_is_set_aside_and_said_once(ceilings_file, bad):
    how, words = BAD_CEILINGS[bad]
    plant_ceilings(ceilings_file, how)
    assert cached_ceilings() is None
    assert_set_aside_and_said_once(ceilings_file, words)
    assert cached_ceilings() is None and take_notices() == []  # said once: the file is gone now


@pytest.mark.parametrize("odd", list(ODD_FILES))
def test_what_is_not_a_ceilings_file_is_set_aside_and_said_once(ceilings_file, odd):
    make, words = ODD_FILES[odd]
    make(ceilings_file)
    assert cached_ceilings() is None
    assert_set_aside_and_said_once(ceilings_file, words)


def test_a_good_ceilings_file_is_read_and_fields_it_does_not_know_are_left(ceilings_file):
    plant_ceilings(ceilings_file, _set(("ceilings", "dram", "comment"), "from a later version"))
    ceilings = cached_ceilings()
    assert ceilings is not None and ceilings.from_cache and ceilings.get("dram").value == 1.2e10
    assert take_notices() == [] and ceilings_file.exists()


def test_ask_json_keeps_its_output_over_a_bad_ceilings_file_and_says_so_once(ceilings_file, tiny_model_folder, capsys):
    """Was: a traceback after the reply, so `ask --json`'s output was lost."""
    from cli.main import main

    plant_ceilings(ceilings_file, _set(("ceilings", "dram", "value"), "fast"))
    assert main(["ask", "Hi", "--model", str(tiny_model_folder), "--json", "--max-new-tokens", "2"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["roofline"] is None or report["roofline"]["ceilings"] is None
    assert err.count("cached ceilings file") == 1 and "ceilings.dram.value must be a number" in err
    assert "Traceback" not in err


def test_the_engine_says_a_bad_ceilings_file_once_in_the_models_notice(ceilings_file, tiny_model):
    from core.engine.core import EngineCore

    plant_ceilings(ceilings_file, _set(("threads",), -4))
    events = []
    engine = EngineCore(events.append)
    engine.adopt(tiny_model)
    engine.close(5.0)
    assert "threads must be from 1" in events[-1].facts.notice and events[-1].facts.ceilings is None


# -- the kernels' library -------------------------------------------------------------------------------------------


@pytest.fixture
def kernel_cache(tmp_path, monkeypatch):
    """A kernels cache in tmp_path whose compiler writes a stand-in library (compiling the real one takes seconds)."""
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.kernels.build, "compiler", lambda: "cc")
    builds = []

    def compile_stand_in(cc, portable, target: Path) -> None:
        builds.append(target)
        target.write_bytes(b"\x7fELF stand-in library")
        staged = target.with_name("staged-checksum")
        staged.write_text(core.kernels.build._sha256(target) + "\n")
        os.replace(staged, core.kernels.build.checksum_path(target))  # as _compile does: the name, whatever is there

    monkeypatch.setattr(core.kernels.build, "_compile", compile_stand_in)
    built = core.kernels.build.build_library()
    assert built.compiled_now and core.kernels.build.verified(built.path)
    builds.clear()
    return built.path, builds


BAD_KERNELS = {
    "a library cut short": (lambda library, checksum: library.write_bytes(b"\x7fELF"), "does not match the SHA-256"),
    "a garbled checksum": (lambda library, checksum: checksum.write_text("zz\n"), "does not match the SHA-256"),
    "an empty checksum": (lambda library, checksum: checksum.write_text(""), "does not match the SHA-256"),
    "a checksum that is a FIFO": (lambda library, checksum: (checksum.unlink(), os.mkfifo(checksum)), "(FIFO)"),
    "a checksum that links to /dev/zero": (
        lambda library, checksum: (checksum.unlink(), checksum.symlink_to("/dev/zero")),
        "its checksum file: it is a symbolic link",
    ),
    "a 2 MB checksum": (lambda library, checksum: checksum.write_bytes(b"0" * 2**21), "larger than 1,024 bytes"),
    "a library that is a FIFO": (lambda library, checksum: (library.unlink(), os.mkfifo(library)), "(FIFO)"),
    "a library that is a folder": (lambda library, checksum: (library.unlink(), library.mkdir()), "a folder"),
}


@pytest.mark.parametrize("bad", list(BAD_KERNELS))
def test_a_damaged_kernel_library_is_set_aside_built_again_and_said_once(kernel_cache, bad):
    library, builds = kernel_cache
    damage, words = BAD_KERNELS[bad]
    damage(library, core.kernels.build.checksum_path(library))
    rebuilt = core.kernels.build.build_library()
    assert builds == [library] and rebuilt.path == library and core.kernels.build.verified(library)
    notices = take_notices()
    assert len(notices) == 1 and "cached kernel library" in notices[0] and words in notices[0], notices
    assert os.path.lexists(library.with_name(library.name + ".bad"))
    assert not core.kernels.build.build_library().compiled_now and take_notices() == []


# -- the converted-model cache's manifest ---------------------------------------------------------------------------


def good_manifest(folder: Path) -> dict:
    """A cache folder holding one file, and the manifest that vouches for it."""
    from core.model.gguf_cache import CACHE_FORMAT, file_crc32

    folder.mkdir(parents=True)
    weights = folder / "model.safetensors"
    weights.write_bytes(b"weights" * 100)
    files = {weights.name: {"size": weights.stat().st_size, "crc32": file_crc32(weights)}}
    return {"format": CACHE_FORMAT, "gguf_sha256": "0" * 64, "source": "m.gguf", "files": files}


def _outside(document):
    """The one file listed by a name that climbs out of the cache folder, to a copy that matches it."""
    (entry,) = document["files"].values()
    document["files"] = {"../outside.bin": entry}
    return document


BAD_MANIFESTS = {
    "a list as the document": (lambda document: [document], "the file must be an object, not list"),
    "files as a list": (_set(("files",), ["model.safetensors"]), "files must be an object, not list"),
    "a size as text": (_set(("files", "model.safetensors", "size"), "700"), "size must be a whole number"),
    "a negative crc": (_set(("files", "model.safetensors", "crc32"), -1), "crc32 must be from 0"),
    "no files": (lambda document: {k: v for k, v in document.items() if k != "files"}, "the file has no files"),
    "a file outside the folder": (_outside, "must name a file in the cache folder"),
    "an absolute file name": (
        lambda document: {**document, "files": {"/etc/hostname": {"size": 1, "crc32": 1}}},
        "must name a file in the cache folder",
    ),
    "not JSON": (lambda document: "{not json", "not JSON"),
}


@pytest.mark.parametrize("bad", list(BAD_MANIFESTS))
def test_a_bad_manifest_fails_verification_is_set_aside_and_said_once(tmp_path, bad):
    """Was: a list gave an AttributeError traceback, and '../outside.bin' was read and trusted outside the cache."""
    from core.model.gguf_cache import MANIFEST_NAME, verify_cache

    folder = tmp_path / "gguf" / "entry"
    document = good_manifest(folder)
    manifest = folder / MANIFEST_NAME
    manifest.write_text(json.dumps(document))
    assert verify_cache(folder, "0" * 64) and take_notices() == []
    (tmp_path / "gguf" / "outside.bin").write_bytes((folder / "model.safetensors").read_bytes())
    how, words = BAD_MANIFESTS[bad]
    planted = how(copy.deepcopy(document))
    manifest.write_text(planted if isinstance(planted, str) else json.dumps(planted))
    assert not verify_cache(folder, "0" * 64)
    assert_set_aside_and_said_once(manifest, words)
