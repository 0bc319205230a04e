"""Convert a GGUF once into a verified cache folder, so later loads skip the slow part.

Two kinds: a float32 safetensors + tokenizer folder for the float dtypes (dequantising is slow), keyed by the
whole file's sha256, and a tokenizer + config folder for native precision, whose weights are packed straight from
the file, keyed by the file's model metadata (GGUFHeader.model_digest): every quantisation of one model shares it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from core.cache_file import CacheFileError, mapping, read_cache_json, record, text, whole
from core.cache_paths import cache_root
from core.progress import ProgressCallback, scaled

MANIFEST_NAME = "latencylab-manifest.json"
CACHE_FORMAT = 1
_CHUNK = 1 << 24
STAGING_PREFIX = ".building-"
# A staging folder whose name carries no process id (written by an older version) is only
# removed once it is clearly abandoned: a conversion takes well under a minute.
LEGACY_STAGING_MAX_AGE_S = 3600


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def file_crc32(path: Path) -> int:
    # crc32 rather than a cryptographic hash: this guards against truncation and bit rot, not
    # an attacker, and it reads the 540 MB weights file twice as fast as sha256 here.
    value = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            value = zlib.crc32(chunk, value)
    return value


FLOAT_KIND, NATIVE_KIND = "gguf", "gguf-native"


def cache_folder_for(gguf_sha256: str, kind: str = FLOAT_KIND) -> Path:
    return cache_root() / kind / f"{gguf_sha256[:24]}-v{CACHE_FORMAT}"


def _file_name(value: object, where: str) -> str:
    """A name inside the cache folder: a manifest naming ../../etc/passwd must not make us read (and hash) it."""
    name = text(255)(value, where)
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise CacheFileError(f"{where} must name a file in the cache folder, not {name[:40]!r}")
    return name


_MANIFEST = record(
    {
        "format": whole(0, 1 << 31),
        "gguf_sha256": text(128),
        "source": text(4096),
        "files": mapping(
            _file_name,
            record({"size": whole(0, 1 << 50), "crc32": whole(0, 0xFFFFFFFF)}, required=("size", "crc32")),
            most=1000,
        ),
    },
    required=("format", "gguf_sha256", "files"),
)


def verify_cache(folder: Path, gguf_sha256: str) -> bool:
    """True when every file the manifest lists is present with its recorded size and checksum. A manifest that
    breaks its schema is set aside and said once; the folder is then built again like any other invalid one."""
    manifest = read_cache_json(
        folder / MANIFEST_NAME,
        lambda document: _MANIFEST(document, "the file"),
        "converted-model cache's manifest",
        "the model is converted again",
    )
    if manifest is None or manifest["format"] != CACHE_FORMAT or manifest["gguf_sha256"] != gguf_sha256:
        return False
    try:
        for name, expected in manifest["files"].items():
            path = folder / name
            if not path.is_file() or path.stat().st_size != expected["size"] or file_crc32(path) != expected["crc32"]:
                return False
    except OSError:
        return False
    return bool(manifest["files"])


@dataclass(frozen=True)
class CacheCheck:
    folder: Path
    gguf_sha256: str
    valid: bool


def check_cache(
    gguf_path: Path, progress: ProgressCallback, kind: str = FLOAT_KIND, digest: str | None = None
) -> CacheCheck:
    """Hash the GGUF (unless its digest is given) and verify its cache folder. Safe on any thread: it imports
    nothing heavy."""
    progress(0.0, "checking the model file")
    gguf_sha256 = digest or file_sha256(gguf_path)
    folder = cache_folder_for(gguf_sha256, kind)
    remove_abandoned_staging(folder.parent)
    progress(0.05, "verifying the converted-model cache")
    valid = verify_cache(folder, gguf_sha256)
    if valid:
        progress(1.0, "cache verified")
    return CacheCheck(folder, gguf_sha256, valid)


def convert(gguf_path: Path, check: CacheCheck, progress: ProgressCallback) -> None:
    """Build the cache folder. Call it on the thread that imports transformers: a second thread
    importing it at the same time can see a half-initialised module."""
    _convert(gguf_path, check.gguf_sha256, check.folder, scaled(progress, 0.1, 1.0))


def _convert(gguf_path: Path, gguf_sha256: str, folder: Path, progress: ProgressCallback) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from core.model.gguf_reads import shared_gguf_reads

    with shared_gguf_reads():
        progress(0.0, "first launch: building the tokenizer from the GGUF (once)")
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, local_files_only=True)
        progress(0.2, "first launch: dequantizing the GGUF weights (once)")
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32, local_files_only=True
        )
    # The GGUF quantizer marks the model unserialisable, but its weights are plain float32 by now.
    # torch types Module.__setattr__'s value as Tensor | Module; a plain attribute takes any value.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    progress(0.8, "first launch: writing the converted-model cache")

    def save(staging: Path) -> None:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)

    write_verified_folder(folder, gguf_sha256, gguf_path.name, save)
    progress(1.0, "converted-model cache written")


def write_verified_folder(folder: Path, gguf_sha256: str, source_name: str, save) -> None:
    """Let save(staging) write the files, record each one's size and checksum, then move the folder in place
    in one step, so a reader sees either no folder or a complete one."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=folder.parent))
    try:
        save(staging)
        files = {
            path.name: {"size": path.stat().st_size, "crc32": file_crc32(path)}
            for path in sorted(staging.iterdir())
            if path.is_file()
        }
        manifest = {"format": CACHE_FORMAT, "gguf_sha256": gguf_sha256, "source": source_name, "files": files}
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def remove_abandoned_staging(parent: Path) -> list[Path]:
    """Delete half-written cache folders whose process is gone (a window closed mid-conversion exits
    without its cleanup running), so each one does not keep about 540 MB on disk for good."""
    removed: list[Path] = []
    try:
        candidates = [path for path in parent.iterdir() if path.is_dir() and path.name.startswith(STAGING_PREFIX)]
    except OSError:
        return removed
    for path in candidates:
        if _staging_abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _staging_abandoned(path: Path) -> bool:
    owner = path.name[len(STAGING_PREFIX) :].split("-", 1)[0]
    if owner.isdigit():
        return not _process_alive(int(owner))
    try:
        return time.time() - path.stat().st_mtime > LEGACY_STAGING_MAX_AGE_S
    except OSError:
        return False


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    except OverflowError:
        return False
    return True
