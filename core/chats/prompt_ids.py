"""Token ids of a chat prompt: the template's own text may hold special tokens, message contents never do."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.chats.template_render import render_chat_template

# Private-use characters stand in for each message while the template is rendered, so the template's
# text and the messages' contents can be tokenised apart: "<|im_start|>" typed by a user stays text.
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"
_SURROGATES = re.compile("[\ud800-\udfff]")
_CACHE_LIMIT = 8192


def clean_text(text: str) -> str:
    """Lone surrogates (undecodable bytes from argv, a paste or an import) cannot be tokenised: show them as U+FFFD."""
    return _SURROGATES.sub("\ufffd", text)


@dataclass(frozen=True)
class TemplatePieces:
    """The rendered template split around the messages: pieces[i] comes before message i, pieces[-1] after all.

    included[i] is False when the template left message i out (some templates drop roles).
    """

    pieces: list[str]
    included: list[bool]


def render_text(tokenizer: Any, messages: Sequence[dict]) -> str:
    if getattr(tokenizer, "chat_template", None):
        # In a worker with a time and memory budget: the template is code from the model file.
        return render_chat_template(tokenizer, list(messages))
    # Base models ship no template; a plain transcript is the conventional stand-in.
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"


def template_pieces(tokenizer: Any, roles: Sequence[str]) -> TemplatePieces:
    """Render the template once with a marker for each message's content, then cut the text at the markers."""
    markers = [f"{_MARK_OPEN}{index}{_MARK_CLOSE}" for index in range(len(roles))]
    text = render_text(tokenizer, [{"role": role, "content": marker} for role, marker in zip(roles, markers)])
    pieces, included, start, pending = [], [], 0, ""
    for marker in markers:
        at = text.find(marker, start)
        if at < 0:
            included.append(False)
            continue
        pieces.append(pending + text[start:at])
        pending = ""
        included.append(True)
        start = at + len(marker)
    pieces.append(text[start:])
    return TemplatePieces(pieces, included)


def template_token_count(tokenizer: Any, roles: Sequence[str]) -> tuple[int, list[bool]]:
    """Tokens the template itself adds around messages with these roles (one batched tokenizer call)."""
    layout = template_pieces(tokenizer, roles)
    counts = _encode_batch(tokenizer, layout.pieces, split_special=False)
    return sum(len(ids) for ids in counts), layout.included


def prompt_ids(tokenizer: Any, messages: Sequence[dict]) -> list[int]:
    """The ids sent to the model: template pieces with their special tokens, contents as plain text."""
    layout = template_pieces(tokenizer, [m["role"] for m in messages])
    contents = [clean_text(m["content"]) for m, kept in zip(messages, layout.included) if kept]
    template_ids = _encode_batch(tokenizer, layout.pieces, split_special=False)
    content_ids = _encode_batch(tokenizer, contents, split_special=True)
    ids: list[int] = []
    for piece, content in zip(template_ids, content_ids):
        ids.extend(piece)
        ids.extend(content)
    ids.extend(template_ids[-1])
    return ids


class ContentTokenCounts:
    """Token counts of message contents, each tokenised once (LRU, keyed by tokenizer and text)."""

    def __init__(self, limit: int = _CACHE_LIMIT):
        self.limit = limit
        # Keyed by the text's length and hash, not the text: a cache must not keep a 50 MB paste alive.
        self._counts: OrderedDict[tuple[int, int, int], int] = OrderedDict()
        self.tokenised = 0  # how many contents were actually tokenised: tests check each is done once

    def counts(self, tokenizer: Any, contents: Sequence[str]) -> list[int]:
        keys = [(id(tokenizer), len(text), hash(text)) for text in contents]
        missing = {key: text for key, text in zip(keys, contents) if key not in self._counts}
        if missing:
            encoded = _encode_batch(tokenizer, [clean_text(text) for text in missing.values()], split_special=True)
            self.tokenised += len(missing)
            for key, ids in zip(missing, encoded):
                self._counts[key] = len(ids)
        result = []
        for key in keys:
            self._counts.move_to_end(key)
            result.append(self._counts[key])
        while len(self._counts) > self.limit:
            self._counts.popitem(last=False)
        return result


# One cache for the process: a chat's older turns are counted once across all of its prompts.
content_token_counts = ContentTokenCounts()


def _encode_batch(tokenizer: Any, texts: Sequence[str], split_special: bool) -> list[list[int]]:
    if not texts:
        return []
    options = {"add_special_tokens": False}
    if split_special:
        options["split_special_tokens"] = True
    return [list(ids) for ids in tokenizer(list(texts), **options)["input_ids"]]
