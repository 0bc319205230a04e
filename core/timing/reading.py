"""What the user saw, as numbers: characters on screen over time, and how long a 250 wpm reader waited for more.

The window draws the same staircase live ("What the user saw"); here it is taken from a trace's own token stamps,
which stand in for the moment each token was drawn (as when a saved chat is redrawn).
"""

from __future__ import annotations

from core.settings import READING_CHARS_PER_S
from core.timing.trace import ReplyTrace


def visible_steps(trace: ReplyTrace, streaming: bool) -> list[tuple[float, int]]:
    """(seconds since Send, characters on screen from then on), one step per change, from the first text on.

    Streaming: each token's text appears at its stamp. Not streaming: the whole reply at the last token's stamp.
    Reasoning is not the answer and is not counted; text held back to the end (tail_text) lands with the last token.
    """
    stamps = trace.timestamps_ns
    if not stamps:
        return []
    start = trace.request_start_ns
    if not streaming:
        total = len(trace.text)
        return [((stamps[-1] - start) / 1e9, total)] if total else []
    reasoning = set(trace.reasoning_indices)
    steps: list[tuple[float, int]] = []
    shown = 0
    last = len(stamps) - 1
    for index, (text, stamp) in enumerate(zip(trace.token_texts, stamps)):
        if index not in reasoning:
            shown += len(text)
        if index == last:
            shown += len(trace.tail_text)
        if shown and (not steps or shown != steps[-1][1]):
            at = (stamp - start) / 1e9
            if steps and steps[-1][0] == at:
                steps[-1] = (at, shown)  # tokens of one stamp (a chunk) appear together
            else:
                steps.append((at, shown))
    return steps


def reader_wait_s(steps: list[tuple[float, int]], chars_per_s: float = READING_CHARS_PER_S) -> float | None:
    """Seconds the staircase spent below the reading line, counted from the first text to the last.

    The reader starts when text first appears and reads chars_per_s; while everything shown has been read and more
    is still to come, they wait. None when no text appeared.
    """
    if not steps:
        return None
    first_at = steps[0][0]
    waited = 0.0
    for (at, shown), (next_at, _) in zip(steps, steps[1:]):
        read_all_at = first_at + shown / chars_per_s
        waited += max(0.0, next_at - max(at, read_all_at))
    return waited
