"""Turn token ids into per-token text deltas in O(1) per token, holding back half-decoded characters."""

from __future__ import annotations

from typing import Any

_INCOMPLETE = "\ufffd"


class IncrementalDetokenizer:
    """Decodes only a short window of recent tokens, as vLLM does, so each push costs the same.

    Decoding a window that starts one step back keeps the tokenizer's leading-space rules right:
    the delta is what the window decodes to beyond what its prefix already decoded to.
    """

    def __init__(self, tokenizer: Any, skip_special_tokens: bool = True):
        self._tokenizer = tokenizer
        self._skip_special = skip_special_tokens
        self._ids: list[int] = []
        self._prefix_offset = 0
        self._read_offset = 0

    def push(self, token_id: int) -> str:
        self._ids.append(token_id)
        prefix_text = self._decode(self._prefix_offset, self._read_offset)
        window_text = self._decode(self._prefix_offset, len(self._ids))
        if len(window_text) > len(prefix_text) and not window_text.endswith(_INCOMPLETE):
            self._prefix_offset = self._read_offset
            self._read_offset = len(self._ids)
            return window_text[len(prefix_text) :]
        return ""

    def flush(self) -> str:
        """Text still held back (for example half of an emoji when generation stopped)."""
        prefix_text = self._decode(self._prefix_offset, self._read_offset)
        window_text = self._decode(self._prefix_offset, len(self._ids))
        self._prefix_offset = self._read_offset = len(self._ids)
        return window_text[len(prefix_text) :] if len(window_text) > len(prefix_text) else ""

    def _decode(self, start: int, end: int) -> str:
        if start >= end:
            return ""
        return self._tokenizer.decode(self._ids[start:end], skip_special_tokens=self._skip_special)
