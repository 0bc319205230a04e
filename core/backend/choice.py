"""Local or remote, one way in: load what a spec names, for the engine, the CLI, the lab and the race."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import startup_gc
from core.backend.load_options import DEFAULT_LOAD_OPTIONS, LoadOptions
from core.chats.template_render import template_worker
from core.generation.local_model import LocalModel
from core.model import loader
from core.progress import ProgressCallback, no_progress
from core.remote.spec import is_remote_spec
from core.settings import SERVER_TIMEOUT

if TYPE_CHECKING:
    from core.remote.connect import RemoteModel


def load_any(
    spec: str | None,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    progress: ProgressCallback = no_progress,
    options: LoadOptions = DEFAULT_LOAD_OPTIONS,
) -> LocalModel | RemoteModel:
    """A LocalModel for a local spec, a RemoteModel for a server URL: each prepares its own replies."""
    try:
        return _load(spec, device, dtype, progress, options)
    finally:
        startup_gc.started()  # what the imports and the first load made lives as long as the process


def _load(
    spec: str | None, device: str, dtype: str, progress: ProgressCallback, options: LoadOptions
) -> LocalModel | RemoteModel:
    if is_remote_spec(spec):
        from core.remote.connect import connect  # the HTTP client (httpx, 0.1 s to import): for a server only

        timeout_s = options.server_timeout_s
        return connect(
            spec,
            api_key=options.api_key,
            progress=progress,
            timeout_s=timeout_s if timeout_s is not None else float(SERVER_TIMEOUT.default or 0),
        )
    template_worker().prestart()  # its start overlaps the load: the first reply's template renders at once
    # Looked up at call time, so a test's stand-in for the loader (tests/conftest.py: held_load) is the one used.
    loaded = loader.load_model(
        spec,
        device=device,
        dtype=dtype,
        progress=progress,
        trust_remote_code=options.trust_remote_code,
        allow_pickle=options.allow_pickle,
    )
    return LocalModel.of(loaded)
