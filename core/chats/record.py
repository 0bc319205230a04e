"""One saved chat as plain data: messages, settings and per-reply traces, to and from a validated JSON document."""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import msgspec

from core.chats.chat_schema import (
    CHAT_SETTINGS,
    MAX_MESSAGES,
    MAX_REPLIES,
    ChatFileError,
    check_fields,
    check_size,
    finite_float,
    no_constant,
)
from core.chats.reply_context import ReplyContext
from core.chats.session import Message
from core.timing.trace import ReplyTrace
from core.timing.trace_codec import TraceFileError, trace_from_dict, trace_to_dict

# 2: each report (server, prompt cache, CPU) saved as one object of its own fields; 1: copied into the trace, still
# read (core/timing/trace_codec.py). A version that reads only 1 sets a 2 aside rather than drop what it cannot hold.
CHAT_FORMAT = "latencylab-chat/2"
READ_FORMATS = ("latencylab-chat/1", CHAT_FORMAT)
CHAT_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TITLE_LIMIT = 80
TITLE_SCAN = 400  # characters of the first line looked at for a title; control characters may be dropped
_NON_BLANK = re.compile(r"\S")
MESSAGE_ROLES = ("user", "assistant")


@dataclass
class ReplyRecord:
    """One reply as a chat keeps it: its trace, and what the window knew about it (streaming, settings, notices)."""

    trace: ReplyTrace
    context: ReplyContext = field(default_factory=ReplyContext)


def without_replaced(replies: list[ReplyRecord], message_index: int | None = None) -> list[ReplyRecord]:
    """The replies a chat keeps: each assistant message's newest reply. Regenerate replaces a message's reply, in the
    chat as in its views; with message_index, that message's reply goes too (it is being replaced now). A chat saved
    before Regenerate dropped the reply it replaced holds both: the older is left out here."""
    newest = {reply.context.message_index: position for position, reply in enumerate(replies)}
    return [
        reply
        for position, reply in enumerate(replies)
        if reply.context.message_index is None
        or (newest[reply.context.message_index] == position and reply.context.message_index != message_index)
    ]


@dataclass
class ChatRecord:
    chat_id: str
    title: str
    created_at: str
    updated_at: str
    system_prompt: str = ""
    settings: dict = field(default_factory=dict)
    model: str | None = None
    messages: list[Message] = field(default_factory=list)
    replies: list[ReplyRecord] = field(default_factory=list)
    reply_pending: bool = False  # the last save happened while a reply was still being generated
    title_is_custom: bool = False

    @classmethod
    def new(cls, title: str = "New chat") -> ChatRecord:
        now = utc_now()
        return cls(chat_id=new_chat_id(), title=title, created_at=now, updated_at=now)

    def snapshot(self) -> ChatRecord:
        """A copy the caller may keep changing: new lists and dicts, shared strings, finished traces and (frozen)
        reply contexts.

        O(messages), never O(text): a save of a 50 MB chat must not stall the thread that asks for it.
        """
        return dataclasses.replace(
            self,
            settings=dict(self.settings),
            messages=[Message(m.role, m.content) for m in self.messages],
            replies=[ReplyRecord(reply.trace, reply.context) for reply in self.replies],
        )

    def change_key(self) -> tuple:
        """Everything a save writes except updated_at, cheap to compare: strings and traces are shared
        between captures, and equal objects compare by identity first, so this is O(messages).
        """
        return (
            self.chat_id,
            self.title,
            self.title_is_custom,
            self.system_prompt,
            self.model,
            self.reply_pending,
            tuple(self.settings.items()),
            tuple((m.role, m.content) for m in self.messages),
            tuple((reply.trace, reply.context) for reply in self.replies),
        )

    def to_document(self) -> dict:
        return {
            "format": CHAT_FORMAT,
            "id": self.chat_id,
            "title": self.title,
            "title_is_custom": self.title_is_custom,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "model": self.model,
            "system_prompt": self.system_prompt,
            "settings": dict(self.settings),
            "reply_pending": self.reply_pending,
            "messages": [message.to_dict() for message in self.messages],
            "replies": [
                {"context": reply.context.to_dict(), "trace": trace_to_dict(reply.trace)} for reply in self.replies
            ],
        }

    @classmethod
    def from_document(cls, document: Any) -> ChatRecord:
        """Validate every field (with the tables of core/chats/chat_schema.py); raise ChatFileError naming the first
        one that is wrong."""
        doc = _require(document, dict, "the document")
        if doc.get("format") not in READ_FORMATS:
            raise ChatFileError(f"not a Latency Lab chat (format is {doc.get('format')!r}, expected {CHAT_FORMAT!r})")
        chat_id = _require(doc.get("id"), str, "id")
        if not CHAT_ID_PATTERN.match(chat_id):
            raise ChatFileError(f"id {chat_id[:80]!r} is not a valid chat id")
        model = doc.get("model")
        if model is not None:
            _require(model, str, "model")
        messages = _bounded(_require(doc.get("messages"), list, "messages"), MAX_MESSAGES, "messages")
        replies = _bounded(_require(doc.get("replies", []), list, "replies"), MAX_REPLIES, "replies")
        messages = [_message(item, index) for index, item in enumerate(messages)]
        replies = [_reply(item, index) for index, item in enumerate(replies)]
        return cls(
            chat_id=chat_id,
            title=_require(doc.get("title"), str, "title"),
            created_at=_require(doc.get("created_at"), str, "created_at"),
            updated_at=_require(doc.get("updated_at"), str, "updated_at"),
            system_prompt=_require(doc.get("system_prompt", ""), str, "system_prompt"),
            settings=check_fields(_require(doc.get("settings", {}), dict, "settings"), CHAT_SETTINGS, "settings"),
            model=model,
            messages=messages,
            replies=replies,
            reply_pending=_require(doc.get("reply_pending", False), bool, "reply_pending"),
            title_is_custom=_require(doc.get("title_is_custom", False), bool, "title_is_custom"),
        )


def encode_document(document: dict, indent: int | None = None) -> bytes:
    """UTF-8 JSON. Text with lone surrogates cannot be UTF-8, so then every non-ASCII character is escaped."""
    try:
        return json.dumps(document, ensure_ascii=False, indent=indent).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(document, ensure_ascii=True, indent=indent).encode("ascii")


def decode_document(data: bytes) -> ChatRecord:
    check_size(data)  # before parsing: what a chat may hold is bounded (chat_schema.py)
    try:
        # msgspec parses a long chat in half json's time; what it refuses (lone surrogates, which a paste can hold
        # and json escapes; NaN; numbers past a double; deep nesting; broken files) json reads again, to read or to
        # say why not.
        document = msgspec.json.decode(data)
    except (msgspec.MsgspecError, RecursionError):
        document = _json_document(data)
    return ChatRecord.from_document(document)


def _json_document(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"), parse_float=finite_float, parse_constant=no_constant)
    except UnicodeDecodeError as error:
        raise ChatFileError(f"the file is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise ChatFileError(f"the file is not complete JSON ({error.msg}, line {error.lineno})") from None
    except ValueError as error:  # a number no field may hold
        raise ChatFileError(str(error)) from None
    except RecursionError:
        raise ChatFileError("the file nests JSON too deeply to be a chat") from None


def default_title(text: str) -> str:
    """The first line of the first message, without control characters, cut to a list-friendly length.

    Only the first TITLE_SCAN characters from the first non-blank one are looked at: a 50 MB first line
    was scanned whole, on the GUI thread, at every save.
    """
    start = _NON_BLANK.search(text)
    if start is None:
        return "New chat"
    head = text[start.start() : start.start() + TITLE_SCAN]
    line = head.splitlines()[0] if head else ""
    line = "".join(ch for ch in line if ch.isprintable()).strip()
    if not line:
        return "New chat"
    return line if len(line) <= TITLE_LIMIT else line[: TITLE_LIMIT - 1].rstrip() + "…"


def clean_title(text: str) -> str:
    """A title the user typed: one printable line, never empty."""
    title = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return title[:200] or "Untitled chat"


def new_chat_id() -> str:
    return f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"


def utc_now() -> str:
    # Microseconds: the list of chats is ordered by this, and two saves can fall in the same second.
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _message(item: Any, index: int) -> Message:
    doc = _require(item, dict, f"messages[{index}]")
    role = doc.get("role")
    if role not in MESSAGE_ROLES:
        raise ChatFileError(f"messages[{index}].role {role!r} is not one of {', '.join(MESSAGE_ROLES)}")
    return Message(role, _require(doc.get("content"), str, f"messages[{index}].content"))


def _reply(item: Any, index: int) -> ReplyRecord:
    doc = _require(item, dict, f"replies[{index}]")
    where = f"replies[{index}].context"
    context = ReplyContext.from_dict(_require(doc.get("context", {}), dict, where), where)
    try:
        trace = trace_from_dict(doc.get("trace"), f"replies[{index}].trace")
    except TraceFileError as error:
        raise ChatFileError(str(error)) from None
    return ReplyRecord(trace, context)


def _require(value: Any, kind: type, where: str) -> Any:
    if value is None:
        raise ChatFileError(f"{where} is missing")
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ChatFileError(f"{where} must be {kind.__name__}, not {type(value).__name__}")
    return value


def _bounded(items: list, limit: int, where: str) -> list:
    if len(items) > limit:
        raise ChatFileError(f"{where} holds {len(items):,} entries; a chat may hold up to {limit:,}")
    return items
