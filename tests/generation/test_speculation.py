"""Speculative decoding with prompt lookup on the real embedded model: the same greedy reply, fewer passes, the
drafted tokens and the counts kept with the reply, Stop and the prompt cache unchanged, refusals said in one line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core.chats.session import Message
from core.generation.request import ReplyRequest, prepare_reply
from core.settings import GenerationSettings
from core.timing.events import TokenEvent

PARAGRAPH = (
    "The lighthouse keeper climbed the narrow stairs every evening at dusk, carrying a small lamp and a notebook in "
    "which he wrote the weather, the ships he saw, and the names of the birds that rested on the rail."
)
COPY = f"Repeat this text exactly, word for word: {PARAGRAPH}"
GREEDY = GenerationSettings(max_new_tokens=48)
SPECULATING = replace(GREEDY, speculation="ngram", draft_tokens=4)


def answer(loaded, settings, messages=None, chat_id=None, on_token=None):
    messages = messages or (Message("user", COPY),)
    reply, _ = prepare_reply(loaded, ReplyRequest("", tuple(messages), settings, chat_id=chat_id))
    events = []

    def observe(event):
        events.append(event)
        if on_token is not None and isinstance(event, TokenEvent):
            on_token(event, reply)

    return reply.run_to_end(observe), events


@pytest.mark.model
def test_a_copied_paragraph_is_the_same_reply_with_most_tokens_accepted_drafts(native_model):
    plain, _ = answer(native_model, GREEDY)
    fast, events = answer(native_model, SPECULATING)
    assert fast.token_ids == plain.token_ids and fast.text == plain.text and PARAGRAPH[:40] in fast.text
    report = fast.speculation
    assert report is not None and report.note is None and report.method == "ngram"
    assert report.accepted > fast.output_tokens / 2  # a copy: most tokens came as accepted drafts
    assert report.drafted >= report.accepted and report.passes < fast.output_tokens - report.accepted
    drafted = [event.index for event in events if isinstance(event, TokenEvent) and event.drafted]
    assert drafted == fast.drafted_indices and len(drafted) == report.accepted
    assert plain.speculation is None and plain.drafted_indices == []


@pytest.mark.model
def test_stop_ends_a_speculating_reply_after_the_current_token(native_model):
    stopped_at = []

    def stop_at_eight(token, reply):
        if token.index == 8:
            stopped_at.append(token.index)
            reply.stop()

    trace, _ = answer(native_model, replace(SPECULATING, max_new_tokens=200), on_token=stop_at_eight)
    assert stopped_at and trace.stop_reason == "stopped"
    assert 9 <= trace.output_tokens <= 9 + SPECULATING.draft_tokens  # at most the pass's drafts after the stop


@pytest.mark.model
def test_the_prompt_cache_serves_a_speculating_chat_and_the_next_turn_is_unchanged(native_model):
    first, _ = answer(native_model, SPECULATING, chat_id="spec-chat")
    history = (Message("user", COPY), Message("assistant", first.text), Message("user", "Now say it once more."))
    cached, _ = answer(native_model, SPECULATING, history, chat_id="spec-chat")
    fresh, _ = answer(native_model, replace(GREEDY, prompt_cache=False), history, chat_id="spec-fresh")
    assert cached.cached_tokens and cached.cached_tokens > len(first.token_ids)
    assert cached.token_ids == fresh.token_ids


def test_on_a_float_model_speculation_is_off_and_says_why(tiny_model):
    trace, _ = answer(tiny_model, SPECULATING)
    assert trace.speculation is not None and trace.speculation.passes == 0
    assert "C kernels" in trace.speculation.note and trace.error is None


@pytest.mark.model
def test_sampled_replies_speculate_too_keeping_drafts_the_model_would_likely_have_sampled(native_model):
    trace, _ = answer(native_model, replace(SPECULATING, temperature=0.3, seed=1))
    report = trace.speculation
    assert report.note is None and report.passes > 0 and 0 < report.accepted <= report.drafted
    assert PARAGRAPH[:20] in trace.text and len(trace.drafted_indices) == report.accepted


def test_keep_or_resample_gives_each_token_the_models_probability():
    """The rule's output distribution is the model's, whatever the draft: 40,000 draws against p, within 5 sigma."""
    import torch

    from core.generation.decode.loop import keep_or_resample

    torch.manual_seed(7)
    p = torch.tensor([0.5, 0.2, 0.15, 0.1, 0.05])
    draws = 40_000
    for draft in (0, 3):
        counts, kept = torch.zeros(5), 0
        for _ in range(draws):
            token, agreed = keep_or_resample(p, draft)
            counts[token] += 1
            kept += agreed
            assert agreed == (token == draft) or float(p[draft]) == 1.0
        sigma = (p * (1 - p) / draws).sqrt()
        assert ((counts / draws - p).abs() < 5 * sigma).all(), (draft, counts / draws)
        assert abs(kept / draws - float(p[draft])) < 5 * float(sigma[draft])
    certain = torch.tensor([0.0, 1.0, 0.0])
    assert keep_or_resample(certain, 1) == (1, True)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--speculate", "medusa"], "invalid choice: 'medusa'"),
        (["--speculate", "ngram", "--draft-tokens", "0"], "draft tokens must be"),
        (["--draft-tokens", "99"], "draft tokens must be"),
    ],
)
def test_bad_speculation_flags_exit_2_in_one_line(run_cli, flags, words):
    done = run_cli("ask", "hi", *flags)
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and words in errors[-1], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.model
@pytest.mark.subprocess
def test_ask_json_keeps_the_counts_and_the_drafted_tokens(run_cli):
    done = run_cli("ask", COPY, "--speculate", "ngram", "--max-new-tokens", "32", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    speculation = report["trace"]["speculation"]
    assert speculation["method"] == "ngram" and speculation["accepted"] > 0
    assert len(report["trace"]["drafted_indices"]) == speculation["accepted"]


# -- a draft model ---------------------------------------------------------------------------------------------------


@pytest.mark.model
def test_the_model_drafting_for_itself_has_every_draft_accepted(native_model):
    from core.model.source import embedded_gguf_path

    itself = replace(GREEDY, speculation="draft", draft_model=str(embedded_gguf_path()), draft_tokens=4)
    plain, _ = answer(native_model, GREEDY, (Message("user", "Write one sentence about the sea."),))
    drafted, _ = answer(native_model, itself, (Message("user", "Write one sentence about the sea."),))
    report = drafted.speculation
    assert drafted.token_ids == plain.token_ids and report.method == "draft model" and report.note is None
    assert report.passes > 0 and report.accepted == report.drafted  # its own greedy tokens, every one


@pytest.mark.model
def test_a_smaller_random_model_of_the_same_vocabulary_drafts_and_the_reply_is_unchanged(native_model, tmp_path):
    from tiny_gguf import write_tiny_llama

    tiny = write_tiny_llama(tmp_path / "tiny-drafter.gguf")  # the embedded tokenizer, random weights
    settings = replace(GREEDY, speculation="draft", draft_model=str(tiny), draft_tokens=3)
    plain, _ = answer(native_model, GREEDY)
    drafted, _ = answer(native_model, settings)
    report = drafted.speculation
    assert drafted.token_ids == plain.token_ids and report.passes > 0
    assert 0 <= report.accepted < report.drafted  # a random drafter is mostly wrong, and that costs no token


@pytest.mark.model
@pytest.mark.subprocess
def test_a_draft_model_with_another_vocabulary_is_refused_in_one_line_before_any_work(run_cli, tmp_path):
    from tiny_gguf import write_tiny_llama

    other = write_tiny_llama(tmp_path / "other-vocab.gguf", renamed_token=(7, "<stars>"))  # was <gh_stars>
    done = run_cli("ask", "hi", "--draft-model", str(other), "--max-new-tokens", "4")
    errors = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("[")]
    assert done.returncode == 1 and len(errors) == 1 and "another vocabulary" in errors[0], done.stderr
    assert done.stdout == ""  # no reply began
    assert "Traceback" not in done.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["none.gguf", "notes.txt"])
def test_a_draft_model_that_cannot_be_found_exits_2_in_one_line_before_the_model_loads(run_cli, tmp_path, name):
    (tmp_path / "notes.txt").write_text("not a model", encoding="utf-8")
    done = run_cli("ask", "hi", "--draft-model", str(tmp_path / name), "--max-new-tokens", "4")
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and errors[-1].startswith("latencylab: error: the draft model: "), done.stderr
    assert name in errors[-1] and "model ready" not in done.stderr and "Traceback" not in done.stderr
