"""Redraw a saved chat: its transcript with each reply's notes, and its traces in the meter."""

from __future__ import annotations

from core.chats.record import ChatRecord, ReplyRecord
from core.timing.budget import BudgetMark
from core.timing.cpu_share import contention_note
from core.timing.trace import ReplyTrace
from gui.chat.draft_tint import drafted_spans
from gui.chat.transcript_view import TranscriptView
from gui.meter.meter_panel import MeterPanel
from gui.meter.trace_playback import play_trace

STOP_NOTES = {"stopped": "[stopped by you]", "max_tokens": "[reached max new tokens]"}
INTERRUPTED_NOTICE = (
    "The reply to your last message was interrupted: the app closed before it finished. Press Regenerate to answer it."
)
# A reopened chat draws its newest messages up to about this much text (and always its last two). Drawing a 70 MB chat
# of 800 messages took 25 s of the GUI thread: at a relaunch the window stayed black for a minute.
DRAWN_CHARS = 1_000_000


def first_drawn(record: ChatRecord) -> int:
    """The index of the oldest message a reopened chat's transcript draws."""
    total = 0
    for index in range(len(record.messages) - 1, -1, -1):
        total += len(record.messages[index].content)
        if total > DRAWN_CHARS and index < len(record.messages) - 2:
            return index + 1
    return 0


def reply_note(trace: ReplyTrace, notice: str | None, mark: BudgetMark | None = None) -> str | None:
    """The lines shown under a reply: a context notice, how it stopped, any error, and its mark against the budget."""
    reasoning = trace.reasoning_text.strip()
    # A reasoning model's thinking counts toward TTFT but is not the answer: shown apart, under it.
    contended = contention_note(trace.cpu_share)
    notes = [
        note
        for note in (
            notice,
            reasoning and f"[reasoning] {reasoning}",
            STOP_NOTES.get(trace.stop_reason or ""),
            contended and f"[{contended}]",
        )
        if note
    ]
    if mark is not None and mark.within is not None:
        notes.append(f"[{mark.line}]")
    if trace.error:
        notes.append(f"Generation failed: {trace.error}. Your message is kept; press Regenerate or send again.")
    return "\n".join(notes) or None


def replay_chat(record: ChatRecord, transcript: TranscriptView, meter: MeterPanel) -> None:
    transcript.clear_transcript()
    notes: dict[int, str | None] = {}
    drafted: dict[int, tuple[str, list[tuple[int, int]]]] = {}  # each reply's text, where its accepted drafts lie
    failures: dict[int, list[str]] = {}
    for reply in record.replies:
        context = reply.context
        note = reply_note(reply.trace, context.notice, meter.budget_mark(reply.trace, streaming_of(reply)))
        if context.message_index is not None:
            notes[context.message_index] = note  # after Regenerate the newest reply at this place wins
            trace = reply.trace
            spans = drafted_spans(trace.token_texts, trace.drafted_indices, trace.reasoning_indices)
            drafted[context.message_index] = (trace.text, spans)
        elif note:
            after = context.after_message
            failures.setdefault(after if after is not None else len(record.messages) - 1, []).append(note)
    first = first_drawn(record)
    if first:
        left_out = sum(len(message.content) for message in record.messages[:first])
        transcript.add_notice(
            f"The chat's first {first:,} messages ({left_out:,} characters) are not drawn here, so that it opens at "
            f"once. They stay in the chat: they are sent to the model as far as its context allows, and File → "
            f"Export chat… writes them."
        )
    for index, message in enumerate(record.messages):
        if index < first:
            continue
        if message.role == "user":
            transcript.add_user_turn(message.content, index)
        else:
            transcript.begin_assistant_turn()
            text, spans = drafted.get(index, ("", []))
            # Only where the message is the trace's text: the spans say nothing of any other.
            transcript.finish_assistant_turn(
                message.content, index, notes.get(index), spans if text == message.content else ()
            )
        for note in failures.get(index, []):
            transcript.begin_assistant_turn()
            transcript.finish_assistant_turn("", None, note)
    if record.reply_pending:
        transcript.add_notice(INTERRUPTED_NOTICE, is_error=True)
    replay_traces(record, meter)


def replay_traces(record: ChatRecord, meter: MeterPanel) -> None:
    """Every reply on the history plot; the last one's token intervals on the interval plot."""
    meter.reset_chat()
    if not record.replies:
        return
    for reply in record.replies[:-1]:
        meter.add_history(reply.trace, streaming_of(reply))
    last = record.replies[-1]
    play_trace(meter, last.trace, streaming_of(last))


def streaming_of(reply: ReplyRecord) -> bool:
    """Whether the reply was shown as it streamed (saved chats from before the switch existed: yes)."""
    return reply.context.streamed
