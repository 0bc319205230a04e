"""Local or remote, one way in: load what a spec names, and prepare a reply on it, for the engine, the CLI and the lab."""

from __future__ import annotations

from dataclasses import dataclass

from core.backend.load_options import DEFAULT_LOAD_OPTIONS, LoadOptions
from core.backend.served_model import ServedModel
from core.chats.session import check_message_sizes
from core.chats.template_render import template_worker
from core.generation import request as local_request
from core.generation.request import ReplyRequest
from core.model import loader
from core.model.loader import LoadedModel
from core.progress import ProgressCallback, no_progress
from core.remote.connect import RemoteModel, connect
from core.remote.reply import RemoteReply
from core.remote.spec import is_remote_spec
from core.settings import SERVER_TIMEOUT


@dataclass(frozen=True)
class RemotePrompt:
    """What a remote reply knows of its prompt before the server answers: the count comes with the usage."""

    prompt_tokens: int = 0
    notice: str | None = None


def load_any(
    spec: str | None,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    progress: ProgressCallback = no_progress,
    options: LoadOptions = DEFAULT_LOAD_OPTIONS,
) -> LoadedModel | RemoteModel:
    """A LoadedModel for a local spec, a RemoteModel for a server URL."""
    if is_remote_spec(spec):
        timeout_s = options.server_timeout_s
        return connect(
            spec,
            api_key=options.api_key,
            progress=progress,
            timeout_s=timeout_s if timeout_s is not None else float(SERVER_TIMEOUT.default or 0),
        )
    template_worker().prestart()  # its start overlaps the load: the first reply's template renders at once
    # Looked up at call time, so a test's stand-in for the loader (tests/conftest.py: held_load) is the one used.
    return loader.load_model(
        spec,
        device=device,
        dtype=dtype,
        progress=progress,
        trust_remote_code=options.trust_remote_code,
        allow_pickle=options.allow_pickle,
    )


def prepare_any(loaded: ServedModel, request: ReplyRequest, *, streaming: bool = True, ignore_eos: bool = False):
    """(the reply, not started; its prompt facts). Raises LatencyLabError when it cannot be asked."""
    check_message_sizes(request.system_prompt, request.messages)  # local or remote, before a tokenizer or a socket
    if isinstance(loaded, RemoteModel):
        reply = RemoteReply(
            loaded,
            request.system_prompt,
            [(m.role, m.content) for m in request.messages],
            request.settings,
            stop=request.stop,
            streaming=streaming,
            ignore_eos=ignore_eos,
        )
        return reply, RemotePrompt()
    if not isinstance(loaded, LoadedModel):
        raise TypeError(f"the engine cannot ask a {type(loaded).__name__}: a LoadedModel or a RemoteModel only")
    return local_request.prepare_reply(loaded, request)  # at call time, as load_any


# The decode loop and the prompt cache belong to the generation layer, above the model's: the model cannot answer for
# them itself (core.model imports no generation code), so the backend, above both, answers for local and remote.


def loop_refusal(loaded: LoadedModel | RemoteModel) -> str | None:
    """Why replies do not run on Latency Lab's lean loop, or None where they do."""
    if isinstance(loaded, RemoteModel):
        return "the model runs on a server; its loop is the server's own"
    from core.generation.decode.choice import lean_loop_refusal

    return lean_loop_refusal(loaded.model)


def set_cache_aside(loaded: LoadedModel | RemoteModel) -> None:
    """Let the next reply reuse nothing the live prompt cache holds (its chat keeps it saved). A server keeps its own
    prompt cache, which no client can empty: a race says what it reused."""
    if isinstance(loaded, RemoteModel) or loop_refusal(loaded) is not None:
        return
    from core.compute_thread import compute_thread
    from core.generation.decode.choice import lean_decoder

    compute_thread().call(lambda: lean_decoder(loaded.model).prompt_cache.set_aside())
