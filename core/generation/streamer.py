"""generate()'s TextIteratorStreamer, adapted: every generated token stamped inside put(), on the generating thread."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from transformers import TextIteratorStreamer


class TimedTokenStreamer(TextIteratorStreamer):
    """Hands each token id to token_made(token_id, stamp_ns=...) instead of queueing word-sized text chunks.

    The stock streamer releases text only at word boundaries, so stamping where text is read would lump several
    tokens under one time. Here the stamp is the first thing put() does. Only model.generate() speaks this protocol
    (the prompt first, to be skipped); the lean loop hands its tokens to the reply directly.
    """

    def __init__(self, tokenizer: Any, token_made: Callable[..., None]):
        super().__init__(tokenizer, skip_prompt=True)
        self._token_made = token_made

    def put(self, value: Any) -> None:
        stamp_ns = time.perf_counter_ns()
        if self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            return
        if value.dim() > 1 and value.shape[0] > 1:
            raise ValueError("the timed streamer follows one sequence; use batch size 1")
        for token_id in value.reshape(-1).tolist():
            self._token_made(token_id, stamp_ns=stamp_ns)

    def end(self) -> None:
        # generate() calls end() only when it returns normally; the reply ends its stream itself with its
        # FinishedEvent, so that the error path ends it too.
        pass
