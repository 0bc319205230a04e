"""Why reuse of the prompt cache stopped, in words, for each way a chat's prompt can change."""

import pytest

from core.chats.cache_break import break_reason
from core.chats.session import PromptPieces

U1, A1, U2, A2, U3 = (
    ("user", "one"),
    ("assistant", "reply one"),
    ("user", "two"),
    ("assistant", "reply two"),
    ("user", "three"),
)
OLD = PromptPieces("Be brief.", (U1, A1, U2, A2, U3))


@pytest.mark.parametrize(
    "new, words",
    [
        (PromptPieces("Be long.", (U1, A1, U2, A2, U3)), "system prompt changed at token 7"),
        (PromptPieces("Be brief.", (U2, A2, U3), dropped=2), "front trimmed to fit the context at token 7"),
        (PromptPieces("Be brief.", (("user", "ONE"), A1, U2, A2, U3)), "your message 1 edited at token 7"),
        (PromptPieces("Be brief.", (U1, ("assistant", "other"), U2, A2, U3)), "assistant message 2 edited at token 7"),
        (PromptPieces("Be brief.", (U1, A1, U3)), "messages 3-4 deleted at token 7"),
        (PromptPieces("Be brief.", (U1, U2, A2, U3)), "message 2 deleted at token 7"),
        (PromptPieces("Be brief.", (U1, A1, U2)), "message 4 deleted at token 7"),
        (
            PromptPieces("Be brief.", (U1, A1, U2, A2, U3, ("assistant", "x"), ("user", "four"))),
            "the last reply reads back as other tokens than were generated at token 7",
        ),
    ],
)
def test_each_change_is_named(new, words):
    assert break_reason(OLD, new, 7) == words


def test_numbers_count_from_the_chats_first_message_when_the_front_is_trimmed():
    old = PromptPieces("", (U2, A2, U3), dropped=2)
    assert (
        break_reason(old, PromptPieces("", (U2, ("assistant", "edited"), U3), dropped=2), 1_234)
        == "assistant message 4 edited at token 1,234"
    )


def test_unknown_pieces_still_give_a_line():
    assert break_reason(None, OLD, 3) == "the prompt differs from the cached one at token 3"
