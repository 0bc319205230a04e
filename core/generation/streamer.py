"""A TextIteratorStreamer that stamps every generated token inside put(), on the generating thread."""

from __future__ import annotations

import time
from typing import Any

from transformers import TextIteratorStreamer

from core.generation.detokenizer import IncrementalDetokenizer
from core.timing.events import FinishedEvent, TokenEvent


class TimedTokenStreamer(TextIteratorStreamer):
    """Queues one TokenEvent per token instead of word-sized text chunks.

    The stock streamer releases text only at word boundaries, so stamping where text is read
    would lump several tokens under one time. Here the stamp is the first thing put() does.
    """

    def __init__(self, tokenizer: Any, timeout_s: float):
        super().__init__(tokenizer, skip_prompt=True, timeout=timeout_s)
        self._detokenizer = IncrementalDetokenizer(tokenizer)
        self.tokens_seen = 0
        self.last_token_id: int | None = None

    def put(self, value: Any) -> None:
        stamp_ns = time.perf_counter_ns()
        if self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            return
        if value.dim() > 1 and value.shape[0] > 1:
            raise ValueError("the timed streamer follows one sequence; use batch size 1")
        for token_id in value.reshape(-1).tolist():
            self.text_queue.put(TokenEvent(self.tokens_seen, token_id, self._detokenizer.push(token_id), stamp_ns))
            self.tokens_seen += 1
            self.last_token_id = token_id

    def end(self) -> None:
        # generate() calls end() only when it returns normally; the runner closes the stream
        # itself with finish() so that the error path closes it too.
        pass

    def held_back_text(self) -> str:
        return self._detokenizer.flush()

    def put_event(self, event: object) -> None:
        """Queue a progress event among the tokens, so the consumer sees everything in one order."""
        self.text_queue.put(event)

    def finish(self, event: FinishedEvent) -> None:
        self.text_queue.put(event)
        self.text_queue.put(self.stop_signal)
