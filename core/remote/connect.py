"""Open a remote engine: find what kind of server answers at a URL, which models it serves, and pick one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass, field, replace
from typing import TYPE_CHECKING

from core.errors import InvalidSettingsError, ModelLoadError
from core.model.facts import ModelFacts
from core.progress import ProgressCallback, no_progress
from core.remote.api_key import api_key_from_environment, checked_api_key
from core.remote.errors import RemoteError, redact
from core.remote.http_client import HttpClient
from core.remote.http_stream import get_json
from core.remote.spec import RemoteSpec, is_remote_spec

if TYPE_CHECKING:
    from core.generation.request import ReplyRequest
    from core.remote.reply import RemotePrompt, RemoteReply

# Whose models list says owned_by what: how an OpenAI-compatible server gives itself away.
_OWNERS = {
    "vllm": "vLLM",
    "llamacpp": "llama.cpp",
    "organization_owner": "LM Studio",
    "library": "Ollama",
    "ollama": "Ollama",
    "sglang": "SGLang",
    "tgi": "TGI",
    "me": "llama-cpp-python",
}


@dataclass
class RemoteModel:
    """A model served elsewhere, as the engine holds it: where, how to talk to it, and the key (never shown).

    Its replies share one HttpClient, whose connections stay open between them; close() ends them (so does dropping
    the model)."""

    spec: RemoteSpec
    protocol: str  # "openai" or "ollama"
    server_kind: str  # "llama.cpp", "vLLM", "Ollama", ... or "OpenAI-compatible"
    model: str
    served_models: tuple[str, ...]
    timeout_s: float
    api_key: str | None = field(default=None, repr=False)
    notice: str | None = None
    client: InitVar[HttpClient | None] = None  # the one connect() reached the server with; else a new one
    http: HttpClient = field(init=False, repr=False, compare=False)

    def __post_init__(self, client: HttpClient | None) -> None:
        self.http = client if client is not None else HttpClient(self.spec.base_url)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RemoteModel:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    @property
    def is_remote(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return f"{self.model} @ {self.spec.host}"

    @property
    def base_url(self) -> str:
        return self.spec.base_url

    @property
    def dtype(self) -> str:
        return "remote"

    @property
    def device(self) -> str:
        return "remote"

    def serves(self, spec: str | None, dtype: str, device: str) -> bool:
        """Never reused by a race: each side connects for itself."""
        return False

    def end_suppressors(self) -> tuple:
        """Nothing here: a server is asked to ignore its end of sequence in the request (core/remote/reply.py)."""
        return ()

    def prepare(
        self, request: ReplyRequest, *, streaming: bool = True, ignore_eos: bool = False
    ) -> tuple[RemoteReply, RemotePrompt]:
        """(the reply, not started; what it knows of its prompt before the server answers). Raises LatencyLabError
        when it cannot be asked."""
        from core.chats.session import check_message_sizes
        from core.remote.reply import RemotePrompt, RemoteReply

        check_message_sizes(request.system_prompt, request.messages)  # before a socket is opened
        messages = [(message.role, message.content) for message in request.messages]
        reply = RemoteReply(
            self,
            request.system_prompt,
            messages,
            request.settings,
            stop=request.stop,
            streaming=streaming,
            ignore_eos=ignore_eos,
        )
        return reply, RemotePrompt()

    def loop_refusal(self) -> str | None:
        return "the model runs on a server; its loop is the server's own"

    def set_cache_aside(self) -> None:
        """Nothing a client can do: a server keeps its own prompt cache (a race says what it reused)."""

    def warm(
        self, request: ReplyRequest, *, streaming: bool = True, progress: Callable[[object], None] | None = None
    ) -> str:
        """Warm the server's own prompt cache with the history before the request's last message: its last question
        is asked for one token, untimed. Says what it sent."""
        history = request.messages[:-1]
        asked = history[:-1] if history and history[-1].role == "assistant" else history
        if not asked:
            return "the shared history holds no question to warm the server's cache with"
        one_token = replace(request, messages=asked, settings=replace(request.settings, max_new_tokens=1))
        reply, _ = self.prepare(one_token, streaming=streaming)
        reply.run_to_end(progress)
        return f"the server's prompt cache was warmed with the history's {len(asked)} messages"

    def describe(self) -> ModelFacts:
        return ModelFacts(
            model=self.name,
            remote=True,
            spec=self.spec.with_choice(model=self.model, protocol=self.protocol).text(),
            server_url=self.spec.base_url,
            server_kind=self.server_kind,
            protocol=self.protocol,
            served_model=self.model,
            served_models=tuple(self.served_models),
            dtype="remote",
            device="remote",
            timeout_s=self.timeout_s,
            notice=self.notice,
        )


def connect(
    text: str, *, api_key: str | None = None, timeout_s: float = 60.0, progress: ProgressCallback = no_progress
) -> RemoteModel:
    """Reach the server, detect its kind, list its models and choose one; ModelLoadError says what failed."""
    if not is_remote_spec(text):
        raise ModelLoadError(f"{text!r} is not a server URL.")
    spec = RemoteSpec.parse(text)
    try:  # checked where it enters, before any header is made of it
        key = checked_api_key(api_key) or api_key_from_environment()
    except InvalidSettingsError as error:
        raise ModelLoadError(str(error)) from None
    progress(0.1, f"connecting to {spec.base_url}")
    try:
        server = _Server(HttpClient(spec.base_url), key, timeout_s)
    except RemoteError as error:  # the environment's proxy is not one it can use
        raise ModelLoadError(str(error)) from None
    try:
        if spec.protocol == "ollama":
            model = _ollama(spec, server)
        elif spec.protocol == "openai":
            model = _openai(spec, server)
        else:
            model = _detect(spec, server)
    except RemoteError as error:
        server.client.close()
        raise ModelLoadError(redact(str(error), key)) from None
    except BaseException:
        server.client.close()
        raise
    progress(1.0, f"connected to {model.server_kind} at {spec.base_url}")
    return model


@dataclass(frozen=True)
class _Server:
    """How connect() asks: through the client the model will keep, with the key and the timeout."""

    client: HttpClient
    key: str | None = field(repr=False)
    timeout_s: float

    def get_json(self, url: str, timeout_s: float | None = None) -> object:
        return get_json(
            self.client, url, api_key=self.key, timeout_s=self.timeout_s if timeout_s is None else timeout_s
        )


def _detect(spec: RemoteSpec, server: _Server) -> RemoteModel:
    base = spec.base_url
    if base.endswith("/v1"):
        return _openai(spec, server)
    try:
        return _ollama(spec, server)  # Ollama's native API lives at the root, next to its /v1
    except RemoteError:
        pass
    try:
        return _openai(spec.with_base(base + "/v1"), server)
    except RemoteError:
        return _openai(spec, server)


def _openai(spec: RemoteSpec, server: _Server) -> RemoteModel:
    key = server.key
    listing = server.get_json(spec.base_url + "/models")
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        raise RemoteError(
            f"{spec.base_url}/models did not list models as an OpenAI-compatible server does; "
            "check the base URL (it usually ends in /v1)."
        )
    names = tuple(redact(str(entry["id"]), key) for entry in entries if isinstance(entry, dict) and entry.get("id"))
    owners = {str(entry.get("owned_by", "")).lower() for entry in entries if isinstance(entry, dict)}
    kind = next((_OWNERS[owner] for owner in owners if owner in _OWNERS), "OpenAI-compatible")
    if kind == "OpenAI-compatible" and _answers(spec.root_url + "/props", server):
        kind = "llama.cpp"
    return _choose(spec, "openai", kind, names, server)


def _ollama(spec: RemoteSpec, server: _Server) -> RemoteModel:
    root = spec.with_base(spec.root_url)
    listing = server.get_json(root.base_url + "/api/tags")
    entries = listing.get("models") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        raise RemoteError(f"{root.base_url}/api/tags did not list models as Ollama does.")
    names = tuple(
        redact(str(entry.get("name") or entry.get("model")), server.key) for entry in entries if isinstance(entry, dict)
    )
    return _choose(root, "ollama", "Ollama", names, server)


def _choose(spec: RemoteSpec, protocol: str, kind: str, names: tuple[str, ...], server: _Server) -> RemoteModel:
    if not names:
        raise RemoteError(f"the {kind} server at {spec.base_url} serves no model.")
    notice = None
    if spec.model is not None:
        if spec.model not in names:
            raise RemoteError(
                f"the {kind} server at {spec.base_url} does not serve a model named {spec.model!r}; "
                f"it serves: {', '.join(names)}."
            )
        chosen = spec.model
    else:
        chosen = names[0]
        if len(names) > 1:
            notice = (
                f"the server serves {len(names)} models ({', '.join(names)}); using {chosen!r}. "
                "Pick another in the model picker, or add #model=NAME to the URL."
            )
    return RemoteModel(
        spec.with_choice(protocol=protocol),
        protocol,
        kind,
        chosen,
        names,
        server.timeout_s,
        server.key,
        notice,
        client=server.client,
    )


def _answers(url: str, server: _Server) -> bool:
    try:
        return isinstance(server.get_json(url, timeout_s=min(server.timeout_s, 5.0)), dict)
    except RemoteError:
        return False
