"""Prompt lookup drafting: the tokens that followed the last few tokens where they appeared before, as drafts.

llama.cpp's ngram-simple and vLLM's n-gram proposer do the same: a reply that copies (a quoted paragraph, code
being edited, a list repeated) continues as its context did, so what followed the latest earlier match of the last
n tokens is a good guess for what comes next, and costs no model at all.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

# The longest match tried first: a longer match is a surer guess. A 1-token match still finds the way back into a
# copy, but free writing matches its common tokens ("the", ",") all the time with wrong guesses after them: it is
# tried only while the last pass kept all its drafts (free writing went 1.06x -> 0.98x of no speculation, copies
# kept their 0.6-0.7x; benchmarks/speculative.py).
LONGEST_MATCH = 3
SHORTEST_MATCH = 1
SHORTEST_MATCH_UNSURE = 2
# A reply's first drafts, at most: a pass's cost grows with its positions on a CPU (benchmarks/verify_cost.py: 9
# positions cost 5.5 steps of the embedded model), so a long first guess that is wrong costs several steps.
FIRST_LENGTH = 2
# Ordinary steps taken at most, after passes that kept none of their drafts, before looking for drafts again.
LONGEST_REST = 32


def prompt_lookup(tokens: np.ndarray, most: int, shortest: int = SHORTEST_MATCH) -> list[int]:
    """Up to `most` tokens that followed the latest earlier occurrence of the last n tokens (n from 3 to shortest).

    tokens: the prompt and the reply so far, 1-D. A step costs a vectorised compare over them (tens of microseconds
    for a few thousand tokens), against a decode step's milliseconds.
    """
    length = tokens.size
    if length < 2:
        return []
    # Where the last token appeared before, latest first: the copy being continued, not an older one.
    ends = np.flatnonzero(tokens[: length - 1] == tokens[length - 1])[::-1]
    for n in range(min(LONGEST_MATCH, length - 1), shortest - 1, -1):
        pattern = tokens[length - n :]
        for end in ends:
            if end >= n - 1 and np.array_equal(tokens[end - n + 1 : end + 1], pattern):
                return tokens[end + 1 : end + 1 + most].tolist()
    return []


class Drafts:
    """A reply's drafter, the decoder's verify pass, and the account: drafts proposed, checked, kept, for the reply's
    SpeculationReport. verify(tokens, start) gives every position's logits in one pass; keep(positions) says how many
    of the sequence's positions stand (a rejected draft's keys and values are written over by the next pass)."""

    method = "ngram"

    def __init__(self, most: int, verify: Callable[[torch.Tensor, int], torch.Tensor], keep: Callable[[int], None]):
        self.most = most  # at most this many drafts a step (the user's draft tokens)
        # This pass's most: a pass that rejects a draft cuts it to what that pass kept plus one, and passes kept whole
        # double it back up to `most`. A wrong guess then costs a short verify pass, not a long one, while a copy
        # runs at full length.
        self.length = min(most, FIRST_LENGTH)
        # Free writing matches its common tokens ("the", ",") all the time and the guesses after them are wrong: on
        # a small CPU-bound model a verify pass of even two positions costs more than a step, so 54 such passes in a
        # 128-token story made it 1.35x slower (benchmarks/speculative.py). A pass that misses rests the drafter for
        # 1, 2, 4, ... up to LONGEST_REST ordinary steps; one that keeps at least half its drafts ends the rest.
        self.rest = 0  # ordinary steps still to take before the next drafts
        self.copying = False  # the last pass kept all its drafts
        self._rest_after_miss = 0
        self.verify = verify
        self._keep = keep
        self.drafted = 0
        self.accepted = 0
        self.passes = 0
        # The reply's own costs (perf_counter_ns): its verify passes, drafting included, and its ordinary steps.
        self.verify_ns = 0
        self.steps = 0
        self.step_ns = 0
        # Per verify pass: the first token it gave, its drafts and how many it rejected (the plot marks each).
        self.pass_marks: list[tuple[int, int, int]] = []

    def propose(self, tokens: np.ndarray, room: int) -> list[int]:
        """This step's drafts (none: an ordinary decode step); room: the new tokens the reply may still take."""
        if self.rest > 0:
            self.rest -= 1
            return []
        shortest = SHORTEST_MATCH if self.copying else SHORTEST_MATCH_UNSURE
        return prompt_lookup(tokens, min(self.length, room), shortest)

    def prime(self, tokens: np.ndarray, room: int) -> None:
        """The prompt is read; prompt lookup needs nothing before the first draft (a draft model reads it here)."""

    def checked(self, drafted: int, accepted: int, positions: int, took_ns: int = 0, first_token: int = 0) -> None:
        """A verify pass checked `drafted` drafts and the model agreed with the first `accepted`; the sequence now
        holds `positions` positions; drafting and the pass took took_ns; first_token: the reply's token the pass gave
        first."""
        self.drafted += drafted
        self.accepted += accepted
        self.copying = accepted == drafted
        self.length = min(self.most, self.length * 2) if self.copying else max(1, accepted + 1)
        # A pass that kept under half its drafts cost more steps than it saved (verify_cost.py: 3 positions cost 2.1
        # steps, 5 cost 3.1), so it counts as a miss.
        missed = 2 * accepted < drafted
        self._rest_after_miss = min(LONGEST_REST, max(1, 2 * self._rest_after_miss)) if missed else 0
        self.rest = self._rest_after_miss
        self.passes += 1
        self.verify_ns += took_ns
        self.pass_marks.append((first_token, drafted, drafted - accepted))
        self._keep(positions)

    def stepped(self, took_ns: int) -> None:
        """An ordinary decode step (nothing to draft) took took_ns, looking for drafts included."""
        self.steps += 1
        self.step_ns += took_ns

    def report(self, note: str | None = None):
        from core.timing.events import SpeculationReport

        return SpeculationReport(
            self.method,
            self.drafted,
            self.accepted,
            self.passes,
            note,
            verify_s=self.verify_ns / 1e9,
            steps=self.steps,
            step_s=self.step_ns / 1e9,
            pass_marks=self.pass_marks,
        )
