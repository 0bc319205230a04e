"""Chat history: the model's template, regenerate and clear, and dropping old turns to fit the context."""

import pytest

from core.chats.session import ChatSession
from core.errors import PromptTooLongError

EMBEDDED_CONTEXT_WINDOW = 8192  # SmolLM2-135M's, from its GGUF; only the tokenizer is loaded here


def test_prompt_uses_the_models_chat_template_and_system_prompt(embedded_tokenizer):
    tokenizer = embedded_tokenizer
    session = ChatSession(system_prompt="You answer like a pirate.")
    session.add_user("Hello there")
    build = session.build_prompt(tokenizer, EMBEDDED_CONTEXT_WINDOW, 64)
    text = tokenizer.decode(build.input_ids)
    assert "<|im_start|>system\nYou answer like a pirate.<|im_end|>" in text
    assert text.rstrip().endswith("<|im_start|>assistant")
    assert build.prompt_tokens == len(build.input_ids) and build.notice is None


def test_regenerate_drops_only_the_last_reply_and_clear_empties():
    session = ChatSession()
    session.add_user("one")
    session.add_assistant("reply one")
    assert session.drop_last_reply() == "reply one"
    assert [m.role for m in session.messages] == ["user"]
    assert session.drop_last_reply() is None
    session.clear()
    assert session.messages == []


def test_oldest_turns_are_dropped_with_a_notice_when_history_overflows(embedded_tokenizer):
    tokenizer = embedded_tokenizer
    session = ChatSession(system_prompt="Be brief.")
    for turn in range(6):
        session.add_user(f"question {turn} " + "word " * 40)
        session.add_assistant(f"answer {turn} " + "word " * 40)
    session.add_user("the newest question")
    full = session.build_prompt(tokenizer, 100_000, 10).prompt_tokens
    build = session.build_prompt(tokenizer, full - 150, 10)
    assert build.dropped_messages >= 2 and build.dropped_messages % 2 == 0
    assert build.prompt_tokens <= full - 160
    assert f"oldest {build.dropped_messages} message" in build.notice
    text = tokenizer.decode(build.input_ids)
    assert "the newest question" in text and "Be brief." in text and "question 0 " not in text
    assert len(session.messages) == 13  # the transcript itself keeps every turn


def test_a_single_message_longer_than_the_window_is_refused(embedded_tokenizer):
    session = ChatSession()
    session.add_user("word " * 3000)
    with pytest.raises(PromptTooLongError) as caught:
        session.build_prompt(embedded_tokenizer, 1024, 100)
    assert caught.value.prompt_tokens > 3000 and caught.value.limit == 924
    assert "924" in str(caught.value)
