"""Which characters of a rendered reply came from accepted draft tokens, however Markdown rendered them.

A reply's tokens are spans of its text (trace.text); the transcript shows that text rendered as Markdown, whose
characters are the text's less its markup (`**`, `#`, fences, link targets), with block breaks for line breaks and
zero-width break points added. The rendered characters are matched to the text's in order, so a tint follows the words
wherever Markdown put them; the Markdown itself is rendered exactly as without the tint.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gui.chat.long_runs import ZERO_WIDTH_SPACE

# Characters a document has where the text had a line break, or nothing: block and line breaks, table cells' frames.
BREAKS = frozenset("\u2029\u2028\ufdd0\ufdd1")
# How far past the last matched character the next one is looked for: farther than any markup between two shown
# characters (a link's target, a code fence's language), near enough that a character Markdown made up (an image's
# "[image: ...]") does not send the match far ahead.
LOOKAHEAD = 200
# Where the text's next character is not the one shown, the candidates: each occurrence of the shown character ahead,
# the first few, scored by how many of the shown characters after it follow in the text, markup skipped.
CANDIDATES = 8
AGREEMENT = 8
# Characters of Markdown's syntax, which a rendered reply leaves out.
MARKUP = frozenset("*_`#[]()!<>~|\\-+=:")


def drafted_spans(
    texts: Sequence[str], drafted_indices: Iterable[int], reasoning_indices: Iterable[int] = ()
) -> list[tuple[int, int]]:
    """Where the accepted draft tokens' texts lie in the reply's text (reasoning left out, as trace.text leaves it):
    (start, end) pairs, neighbours merged."""
    drafted, reasoning = set(drafted_indices), set(reasoning_indices)
    spans: list[tuple[int, int]] = []
    at = 0
    for index, text in enumerate(texts):
        if index in reasoning:
            continue
        if index in drafted and text:
            if spans and spans[-1][1] == at:
                spans[-1] = (spans[-1][0], at + len(text))
            else:
                spans.append((at, at + len(text)))
        at += len(text)
    return spans


def source_positions(source: str, rendered: str) -> list[int | None]:
    """For each character of rendered, the index of the character of source it shows; None for one Markdown made
    (a break where the text had none, an image's words). A zero-width break point shows what the one before it shows."""
    positions: list[int | None] = []
    at = 0  # the first character of source not yet matched
    for index, char in enumerate(rendered):
        if char == ZERO_WIDTH_SPACE:
            positions.append(positions[-1] if positions else None)
            continue
        if char.isspace() or char in BREAKS:
            # A space or a break shows the text's next space or line break, past markup ("**bold** word"); a table's
            # cell frame, where "|a|b|" has none, shows nothing.
            after = _past_markup(source, at)
            if after < len(source) and source[after].isspace():
                positions.append(after)
                at = after + 1
            else:
                positions.append(None)
            continue
        if at < len(source) and source[at] == char:  # plain text: nearly every character
            positions.append(at)
            at += 1
            continue
        found = _best_match(source, rendered, index, at)
        positions.append(found)
        if found is not None:
            at = found + 1
    return positions


def _past_markup(source: str, at: int) -> int:
    end = min(len(source), at + LOOKAHEAD)
    while at < end and source[at] in MARKUP:
        at += 1
    return at


def _best_match(source: str, rendered: str, index: int, at: int) -> int | None:
    """The occurrence of rendered[index] ahead in source that the most shown characters after it follow (two at least,
    where two are left); the first of those that tie: print's p in "```python\\nprint(", not python's."""
    # One character alone is no evidence: the "i" of an image's "[image: alt]" would be matched in "file:" ahead.
    best, best_score = None, min(2, len(rendered) - index) - 1
    start, end = at, min(len(source), at + LOOKAHEAD)
    for _ in range(CANDIDATES):
        found = source.find(rendered[index], start, end)
        if found < 0:
            break
        score = _agreement(source, rendered, index, found)
        if score > best_score:
            best, best_score = found, score
            if score == AGREEMENT:
                break
        start = found + 1
    return best


def _agreement(source: str, rendered: str, index: int, at: int) -> int:
    """How many shown characters from index on follow in source from at, markup in source skipped (at most AGREEMENT)."""
    score = 0
    while score < AGREEMENT and index < len(rendered) and at < len(source):
        shown, written = rendered[index], source[at]
        if shown == written or ((shown.isspace() or shown in BREAKS) and written.isspace()):
            score, index, at = score + 1, index + 1, at + 1
        elif shown == ZERO_WIDTH_SPACE:
            index += 1
        elif written in MARKUP:
            at += 1
        else:
            break
    return score


def tinted_runs(source: str, rendered: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs of rendered, (start, end), whose characters show characters of source inside spans."""
    if not spans:
        return []
    inside = bytearray(len(source) + 1)
    for start, end in spans:
        inside[start:end] = b"\x01" * (end - start)
    runs: list[tuple[int, int]] = []
    for index, position in enumerate(source_positions(source, rendered)):
        if position is None or not inside[position]:
            continue
        if runs and runs[-1][1] == index:
            runs[-1] = (runs[-1][0], index + 1)
        else:
            runs.append((index, index + 1))
    return runs
