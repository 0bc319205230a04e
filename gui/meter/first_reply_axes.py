"""Where a window's first reply starts its live plots' axes: at what its budget can reach, having no last reply."""

from __future__ import annotations

# A later reply starts on the axes the last one ended on (fitted to it), and they step only if it outgrows them. A
# window's first reply had only the empty plots' small axes, so a 128-token reply stepped its two live plots seven
# times: each step re-lays out a plot and pictures it again, about 45 ms of the window's CPU while the model ran
# (0.118 against 0.063 of a core for a later reply, black-box on Xvfb). It starts at its budget (max new tokens)
# instead, fitted when it ends as any reply is.
FIRST_AXIS_TOKENS = 1024  # at most: a budget of thousands would crowd a short reply's points into the axis's start
CHARS_PER_TOKEN = 4  # English text's usual average; the character axis steps on if a reply writes more


def first_axis_tokens(budget_tokens: int | None) -> int | None:
    """The tokens a first reply's axes are sized for; None without a budget."""
    if not isinstance(budget_tokens, int) or isinstance(budget_tokens, bool) or budget_tokens < 1:
        return None
    return min(budget_tokens, FIRST_AXIS_TOKENS)
