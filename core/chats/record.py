"""One saved chat as plain data: messages, settings and per-reply traces, to and from a validated JSON document."""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from core.chats.chat_schema import (
    CHAT_SETTINGS,
    MAX_MESSAGES,
    MAX_REPLIES,
    MAX_TOKENS_PER_REPLY,
    TRACE_SERVER,
    ChatFileError,
    check_fields,
    check_size,
    check_timings,
    finite_float,
    no_constant,
    whole,
)
from core.chats.reply_context import ReplyContext
from core.chats.session import Message
from core.timing.events import StopReason
from core.timing.trace import ReplyTrace

CHAT_FORMAT = "latencylab-chat/1"
CHAT_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TITLE_LIMIT = 80
TITLE_SCAN = 400  # characters of the first line looked at for a title; control characters may be dropped
_NON_BLANK = re.compile(r"\S")
MESSAGE_ROLES = ("user", "assistant")
STOP_REASONS = tuple(reason.value for reason in StopReason)


@dataclass
class ReplyRecord:
    """One reply as a chat keeps it: its trace, and what the window knew about it (streaming, settings, notices)."""

    trace: ReplyTrace
    context: ReplyContext = field(default_factory=ReplyContext)


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
        if doc.get("format") != CHAT_FORMAT:
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
    try:
        check_size(data)  # before parsing: what a chat may hold is bounded (chat_schema.py)
        document = json.loads(data.decode("utf-8"), parse_float=finite_float, parse_constant=no_constant)
    except UnicodeDecodeError as error:
        raise ChatFileError(f"the file is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise ChatFileError(f"the file is not complete JSON ({error.msg}, line {error.lineno})") from None
    except ValueError as error:  # a number no field may hold
        raise ChatFileError(str(error)) from None
    except RecursionError:
        raise ChatFileError("the file nests JSON too deeply to be a chat") from None
    return ChatRecord.from_document(document)


def trace_to_dict(trace: ReplyTrace) -> dict:
    return {
        "request_start_ns": trace.request_start_ns,
        "prompt_tokens": trace.prompt_tokens,
        "token_ids": list(trace.token_ids),
        "token_texts": list(trace.token_texts),
        "timestamps_ns": list(trace.timestamps_ns),
        "arrivals_ns": list(trace.arrivals_ns),
        "stop_reason": trace.stop_reason,
        "error": trace.error,
        "tail_text": trace.tail_text,
        "prefill_progress": [[stamp, fraction] for stamp, fraction in trace.prefill_progress],
        "prompt_ready_ns": trace.prompt_ready_ns,
        "compute_started_ns": trace.compute_started_ns,
        "finished_ns": trace.finished_ns,
        "painted_ns": list(trace.painted_ns),
        "stop_requested_ns": trace.stop_requested_ns,
        "chunk_of": list(trace.chunk_of),
        "reasoning_indices": list(trace.reasoning_indices),
        "server": trace.server,
        "server_output_tokens": trace.server_output_tokens,
        "first_byte_ns": trace.first_byte_ns,
        "cached_tokens": trace.cached_tokens,
        "cache_reason": trace.cache_reason,
        "cache_break_at": trace.cache_break_at,
        "cache_source": trace.cache_source,
        "cache_ready_ns": trace.cache_ready_ns,
        "engine_cpu_s": trace.engine_cpu_s,
        "engine_wall_s": trace.engine_wall_s,
        "engine_threads": trace.engine_threads,
        "window_cpu_s": trace.window_cpu_s,
    }


def trace_from_dict(data: Any, where: str) -> ReplyTrace:
    doc = _require(data, dict, where)
    token_ids = _bounded(
        _int_list(doc.get("token_ids"), f"{where}.token_ids"), MAX_TOKENS_PER_REPLY, f"{where}.token_ids"
    )
    token_texts = _require(doc.get("token_texts"), list, f"{where}.token_texts")
    if not all(isinstance(text, str) for text in token_texts):
        raise ChatFileError(f"{where}.token_texts must hold only text")
    stamps = _int_list(doc.get("timestamps_ns"), f"{where}.timestamps_ns")
    if not len(token_ids) == len(token_texts) == len(stamps):
        raise ChatFileError(f"{where}: token_ids, token_texts and timestamps_ns differ in length")
    arrivals = _int_list(doc.get("arrivals_ns", []), f"{where}.arrivals_ns")
    if arrivals and len(arrivals) != len(stamps):
        raise ChatFileError(f"{where}: arrivals_ns and timestamps_ns differ in length")
    painted = _int_list(doc.get("painted_ns", []), f"{where}.painted_ns")  # its type checked before its length
    if len(painted) > len(stamps):
        raise ChatFileError(f"{where}: painted_ns has more stamps than there are tokens")
    chunk_of = _int_list(doc.get("chunk_of", []), f"{where}.chunk_of")
    if chunk_of and len(chunk_of) != len(stamps):
        raise ChatFileError(f"{where}: chunk_of and timestamps_ns differ in length")
    reasoning = _int_list(doc.get("reasoning_indices", []), f"{where}.reasoning_indices")
    if any(not 0 <= index < len(stamps) for index in reasoning):
        raise ChatFileError(f"{where}.reasoning_indices points past the tokens")
    server = doc.get("server")
    if server is not None:
        check_fields(_require(server, dict, f"{where}.server"), TRACE_SERVER, f"{where}.server")
        check_timings(server.get("timings"), f"{where}.server.timings")
    stop_reason = doc.get("stop_reason")
    if stop_reason is not None and stop_reason not in STOP_REASONS:
        raise ChatFileError(f"{where}.stop_reason {stop_reason!r} is unknown")
    error = doc.get("error")
    if error is not None:
        _require(error, str, f"{where}.error")
    return ReplyTrace(
        request_start_ns=_int(doc.get("request_start_ns"), f"{where}.request_start_ns"),
        prompt_tokens=_int(doc.get("prompt_tokens"), f"{where}.prompt_tokens"),
        token_ids=token_ids,
        token_texts=list(token_texts),
        timestamps_ns=stamps,
        arrivals_ns=arrivals,
        stop_reason=stop_reason,
        error=error,
        tail_text=_require(doc.get("tail_text", ""), str, f"{where}.tail_text"),
        prefill_progress=_progress(doc.get("prefill_progress", []), f"{where}.prefill_progress"),
        prompt_ready_ns=_optional_int(doc.get("prompt_ready_ns"), f"{where}.prompt_ready_ns"),
        compute_started_ns=_optional_int(doc.get("compute_started_ns"), f"{where}.compute_started_ns"),
        finished_ns=_optional_int(doc.get("finished_ns"), f"{where}.finished_ns"),
        painted_ns=painted,
        stop_requested_ns=_optional_int(doc.get("stop_requested_ns"), f"{where}.stop_requested_ns"),
        chunk_of=chunk_of,
        reasoning_indices=reasoning,
        server=server,
        server_output_tokens=_optional_int(doc.get("server_output_tokens"), f"{where}.server_output_tokens"),
        first_byte_ns=_optional_int(doc.get("first_byte_ns"), f"{where}.first_byte_ns"),
        cached_tokens=_optional_int(doc.get("cached_tokens"), f"{where}.cached_tokens"),
        cache_reason=_optional_text(doc.get("cache_reason"), f"{where}.cache_reason"),
        cache_break_at=_optional_int(doc.get("cache_break_at"), f"{where}.cache_break_at"),
        cache_source=_optional_text(doc.get("cache_source"), f"{where}.cache_source"),
        cache_ready_ns=_optional_int(doc.get("cache_ready_ns"), f"{where}.cache_ready_ns"),
        engine_cpu_s=_optional_seconds(doc.get("engine_cpu_s"), f"{where}.engine_cpu_s"),
        engine_wall_s=_optional_seconds(doc.get("engine_wall_s"), f"{where}.engine_wall_s"),
        engine_threads=_optional_int(doc.get("engine_threads"), f"{where}.engine_threads"),
        window_cpu_s=_optional_seconds(doc.get("window_cpu_s"), f"{where}.window_cpu_s"),
    )


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
    return ReplyRecord(trace=trace_from_dict(doc.get("trace"), f"replies[{index}].trace"), context=context)


def _require(value: Any, kind: type, where: str) -> Any:
    if value is None:
        raise ChatFileError(f"{where} is missing")
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ChatFileError(f"{where} must be {kind.__name__}, not {type(value).__name__}")
    return value


def _int(value: Any, where: str) -> int:
    if not whole(_require(value, int, where)):
        raise ChatFileError(f"{where} is past 64 bits")
    return value


def _bounded(items: list, limit: int, where: str) -> list:
    if len(items) > limit:
        raise ChatFileError(f"{where} holds {len(items):,} entries; a chat may hold up to {limit:,}")
    return items


def _optional_int(value: Any, where: str) -> int | None:
    """Stamps added after the first format: absent in older files."""
    return None if value is None else _int(value, where)


def _optional_seconds(value: Any, where: str) -> float | None:
    """A duration added after the first format: absent in older files, else a finite number from 0 to a day."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 86_400:
        raise ChatFileError(f"{where} must be seconds from 0 to 86400, not {value!r}")
    return float(value)


def _optional_text(value: Any, where: str) -> str | None:
    return None if value is None else _require(value, str, where)


def _progress(value: Any, where: str) -> list[tuple[int, float]]:
    """[[stamp_ns, fraction], ...], fractions between 0 and 1 and never falling."""
    points: list[tuple[int, float]] = []
    for index, item in enumerate(_require(value, list, where)):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not whole(item[0])
            or not isinstance(item[1], (int, float))
            or isinstance(item[1], bool)
            or not 0.0 <= item[1] <= 1.0
        ):
            raise ChatFileError(f"{where}[{index}] must be [stamp_ns, fraction between 0 and 1]")
        if points and item[1] < points[-1][1]:
            raise ChatFileError(f"{where}[{index}]: the fraction falls")
        points.append((item[0], float(item[1])))
    return points


def _int_list(value: Any, where: str) -> list[int]:
    items = _require(value, list, where)
    if not all(isinstance(item, int) and not isinstance(item, bool) for item in items):
        raise ChatFileError(f"{where} must hold only whole numbers")
    if items and not (whole(min(items)) and whole(max(items))):
        raise ChatFileError(f"{where} holds a number past 64 bits")
    return list(items)
