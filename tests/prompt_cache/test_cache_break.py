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


def test_a_new_chats_first_message_is_no_cache_loss_and_a_reopened_history_is():
    """A chat's first message after another chat was blamed on the cache ("this chat had nothing cached") and got
    advice about edited messages, though it had no history to lose and reused the shared start."""
    from core.diagnosis.diagnose import diagnose
    from core.generation.decode import prompt_cache as pc
    from core.generation.local_reply import cache_report
    from tests.support.made_traces import made_trace

    def report(messages):
        pieces = PromptPieces("Be brief.", messages)
        return cache_report(pc.CacheUse(370, 240, 0, None, pc.OTHER_CHAT), pc.CacheRequest("chat", pieces))

    first = report((U1,))
    assert first.status == "new" and first.reason.startswith("a new chat: no history of its own to reuse yet")
    reopened = report((U1, A1, U2))  # a history this process never cached (a chat reopened after a relaunch)
    assert reopened.status == "other" and reopened.reason.startswith("this chat had nothing cached")
    kinds = [
        [finding.kind for finding in diagnose(made_trace([10.0] * 5, ttft_ms=400, prompt_tokens=370, cache=cache))]
        for cache in (first, reopened)
    ]
    assert "prompt_cache" not in kinds[0] and "prompt_cache" in kinds[1]
