"""A request for one reply, as plain data, and turning it into a LocalReply: the prompt built, checked and tokenised."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from core.chats.context_fit import check_reply_budget
from core.chats.session import ChatSession, Message, PromptBuild
from core.chats.template_render import stop_renders_on
from core.generation.local_reply import DEFAULT_TOKEN_TIMEOUT_S, LocalReply
from core.model.loader import LoadedModel
from core.settings import GenerationSettings


@dataclass(frozen=True)
class ReplyRequest:
    """What to answer and how, made where the user asked; it carries the reply's stop event from that moment.

    A Stop pressed before the reply was even built lands on this event, so it is never lost.
    """

    system_prompt: str
    messages: tuple[Message, ...]
    settings: GenerationSettings
    request_start_ns: int | None = None
    stop: threading.Event = field(default_factory=threading.Event, compare=False)
    logits_processors: tuple = ()
    chat_id: str | None = None  # whose prompt cache this reply continues; None: the one anonymous chat


def prepare_reply(
    loaded: LoadedModel, request: ReplyRequest, timeout_s: float = DEFAULT_TOKEN_TIMEOUT_S
) -> tuple[LocalReply, PromptBuild]:
    """The reply's LocalReply (not started) and its prompt; raises LatencyLabError when it cannot be asked.

    Tokenising a long chat takes a while (a 1 MB paste about a second), so callers run this off the GUI thread.
    """
    check_reply_budget(request.settings.max_new_tokens, loaded.context_window)
    if request.settings.speculation == "draft" and request.settings.draft_model:
        from core.generation.decode.draft_model import draft_model_for

        draft_model_for(loaded, request.settings.draft_model)  # a file that cannot draft is refused before any work
    session = ChatSession(request.system_prompt, [Message(m.role, m.content) for m in request.messages])
    with stop_renders_on(request.stop):  # a Stop during a slow template ends the render at once
        prompt = session.build_prompt(loaded.tokenizer, loaded.context_window, request.settings.max_new_tokens)
    from core.generation.decode.prompt_cache import CacheRequest

    cache = CacheRequest(request.chat_id, prompt.pieces, request.settings.prompt_cache)
    generation = LocalReply(
        loaded,
        prompt.input_ids,
        request.settings,
        stop=request.stop,
        timeout_s=timeout_s,
        logits_processors=request.logits_processors,
        cache=cache,
    )
    return generation, prompt
