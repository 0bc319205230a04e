"""A model loaded into this process, with the verbs every served model answers: prepare a reply, warm, set its cache aside."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from core.model.loader import LoadedModel

if TYPE_CHECKING:
    from core.chats.session import PromptBuild
    from core.generation.local_reply import LocalReply
    from core.generation.request import ReplyRequest


@dataclass
class LocalModel(LoadedModel):
    """LoadedModel's weights and facts; the decode loop and the prompt cache, which sit above the model's layer,
    answer here (core.model imports no generation code)."""

    @classmethod
    def of(cls, loaded: LoadedModel) -> LocalModel:
        """The same weights and facts, with the verbs (the loader makes a plain LoadedModel)."""
        if isinstance(loaded, cls):
            return loaded
        return cls(**{each.name: getattr(loaded, each.name) for each in fields(LoadedModel)})

    def prepare(
        self, request: ReplyRequest, *, streaming: bool = True, ignore_eos: bool = False
    ) -> tuple[LocalReply, PromptBuild]:
        """(the reply, not started; its prompt). Raises LatencyLabError when it cannot be asked. Streaming is the
        window's to show, and a reply that ignores its end gets the model's end_suppressors in its request."""
        from core.chats.session import check_message_sizes
        from core.generation import request as requests

        check_message_sizes(request.system_prompt, request.messages)
        return requests.prepare_reply(self, request)  # looked up at call time, so a test may stand in for it

    def loop_refusal(self) -> str | None:
        """Why replies do not run on Latency Lab's lean loop, or None where they do."""
        from core.generation.decode.choice import lean_loop_refusal

        return lean_loop_refusal(self.model)

    def set_cache_aside(self) -> None:
        """Let the next reply reuse nothing the live prompt cache holds (its chat keeps it saved)."""
        if self.loop_refusal() is not None:
            return  # generate() keeps no prompt cache
        from core.compute_thread import compute_thread
        from core.generation.decode.choice import lean_decoder

        compute_thread().call(lambda: lean_decoder(self.model).prompt_cache.set_aside())

    def warm(
        self, request: ReplyRequest, *, streaming: bool = True, progress: Callable[[object], None] | None = None
    ) -> str:
        """Put everything before the request's last message in the prompt cache, as a running chat's earlier turns
        would have: one token is generated after it, untimed. Says what it held."""
        from core.chats.session import ChatSession, Message
        from core.generation.decode.prompt_cache import CacheRequest, common_prefix
        from core.generation.local_reply import LocalReply

        history = list(request.messages[:-1])
        limit, window = request.settings.max_new_tokens, self.context_window
        built = ChatSession(request.system_prompt, list(request.messages)).build_prompt(self.tokenizer, window, limit)
        other = ChatSession(request.system_prompt, [*history, Message("user", ".")])
        shared = common_prefix(built.input_ids, other.build_prompt(self.tokenizer, window, limit).input_ids)
        if shared < 2:
            return "the shared history left nothing to cache"
        one_token = replace(request.settings, max_new_tokens=1)
        cache = CacheRequest(request.chat_id, built.pieces, True)
        LocalReply(self, built.input_ids[:shared], one_token, stop=request.stop, cache=cache).run_to_end(progress)
        return f"the prompt cache held the shared history ({shared:,} tokens) before the reply, as in a running chat"
