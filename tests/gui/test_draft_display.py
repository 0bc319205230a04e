"""Accepted draft tokens as the window shows them, without a model: their spans in the reply, their tint through
Markdown, their x's on the interval plot and the speculation cards."""

import math

from PySide6.QtGui import QTextCursor

from core.timing.events import SpeculationReport
from gui.chat.draft_tint import drafted_spans, tinted_runs
from gui.chat.transcript_view import TranscriptView
from gui.meter.interval_plot import DRAFT_LEGEND, IntervalPlot
from gui.meter.speculation_cards import SpeculationCards
from gui.plotting.data_height import hold_data_height
from gui.untrusted_text import NoResourceDocument, insert_untrusted_markdown

# A reply in Markdown, as tokens; the accepted drafts are the words a copy would give for free.
TOKENS = [
    "#", " Notes", "\n\n", "Some", " **", "bold", "**", " words", " and", " `", "code", "`.", "\n\n",
    "-", " one", " item", "\n", "-", " two", "\n\n", "```", "python", "\n", "print", "(x", ")\n", "```", "\n\n",
    "See", " [", "the", " docs", "](", "http", "://", "example", ".com", ")", " for", " more", ".",
]  # fmt: skip
DRAFTED = [5, 7, 8, 14, 15, 23, 24, 30, 31, 38, 39]
TINTED = ["bold words and", "one item", "print(x", "the docs", "for more"]


def _words(runs) -> list[str]:
    return [" ".join(run.split()) for run in runs if run.strip()]


def _rendered(markdown: str) -> str:
    document = NoResourceDocument()
    insert_untrusted_markdown(QTextCursor(document), markdown)
    return document.toRawText()


def test_drafted_spans_are_the_drafts_text_in_the_reply_reasoning_left_out():
    texts = ["<think>", "hm", "</think>", "A", " b", " c", " d"]
    spans = drafted_spans(texts, drafted_indices=[1, 4, 5], reasoning_indices=[0, 1, 2])
    text = "".join(texts[3:])
    assert [text[start:end] for start, end in spans] == [" b c"]  # neighbours merged, reasoning not in the text


def test_the_tint_falls_on_the_drafts_words_however_markdown_renders_them(qapp):
    text = "".join(TOKENS)
    spans = drafted_spans(TOKENS, DRAFTED)
    rendered = _rendered(text)
    runs = tinted_runs(text, rendered, spans)
    # Each drafted word, and nothing else, in the rendered text: no "**", no fence's "python", no link target.
    # "**" between "bold" and " words" is not shown: the two drafts meet in one run.
    assert _words(rendered[start:end] for start, end in runs) == TINTED


def test_a_long_plain_reply_is_tinted_token_for_token(qapp):
    tokens = [f" word{index}" for index in range(3000)]
    drafted = [index for index in range(3000) if index % 3]
    text = "".join(tokens)
    spans = drafted_spans(tokens, drafted)
    rendered = _rendered(text)
    runs = tinted_runs(text, rendered, spans)
    # The same runs, one character earlier: Markdown drops the reply's leading space.
    assert rendered == text[1:] and runs == [(start - 1, end - 1) for start, end in spans]


def test_the_transcript_tints_on_request_only_the_drafts_and_never_a_later_note(qtbot):
    view = TranscriptView()
    qtbot.addWidget(view)
    view.add_user_turn("Copy this.")
    view.begin_assistant_turn()
    text = "".join(TOKENS)
    view.finish_assistant_turn(text, 1, "[reached max new tokens]", drafted_spans(TOKENS, DRAFTED))
    view.add_notice("A notice after the reply.")
    assert view.tinted_text() == []
    view.tint_action.trigger()
    assert _words(view.tinted_text()) == TINTED
    # A reply added while the tint is on is tinted as it is shown; one removed takes its tint with it.
    view.begin_assistant_turn()
    view.finish_assistant_turn("Again <b>free</b> text", 3, None, [(5, 17)])
    assert _words(view.tinted_text())[-1] == "<b>free</b>"  # model output is text, never HTML
    view.remove_last_reply()
    assert _words(view.tinted_text()) == TINTED
    view.tint_action.trigger()
    assert view.tinted_text() == []
    view.clear_transcript()
    view.tint_action.trigger()
    assert view.tinted_text() == []


def test_accepted_drafts_are_purple_xs_apart_from_the_models_own_steps_with_a_legend_entry(qtbot):
    plot = IntervalPlot()
    qtbot.addWidget(plot)
    hold_data_height(plot, 120)
    plot.resize(640, 300)  # room for three entries of the legend in a row, not four
    plot.show()
    qtbot.waitUntil(lambda: plot.getViewBox().width() > 0)
    legend = plot.getPlotItem().legend
    least = plot.minimumHeight()

    def labels():
        return [label.text for _sample, label in legend.items]

    plot.add_ttft(200.0)
    drafted = {2, 3, 4, 7, 8}
    for index in range(1, 10):
        gap = 0.05 if index in drafted else 40.0
        plot.add_interval(index, gap, 20.0, drafted=index in drafted)
    plot.refresh()
    assert plot.drafted_count() == 5 and plot.marker_count() == 4
    assert list(plot.draft_item.getData()[0]) == sorted(drafted)
    assert [10**y for y in plot.draft_item.getData()[1]] == [math.pow(10, math.log10(0.05))] * 5
    assert plot.draft_item.drawn_elements() == 4 * 5  # two strokes an x
    assert DRAFT_LEGEND in labels()
    # Its entry takes the legend to a second row: the plot's least height grows by it, keeping 120 pixels of data.
    assert plot.minimumHeight() > least
    plot.reset()
    assert plot.drafted_count() == 0 and DRAFT_LEGEND not in labels() and plot.minimumHeight() == least
    plot.add_interval(1, 30.0, 30.0)
    plot.refresh()
    assert DRAFT_LEGEND not in labels()  # a reply without speculation keeps the legend it had


def test_the_speculation_cards_say_the_report_or_why_it_did_not_run(qtbot):
    cards = SpeculationCards()
    qtbot.addWidget(cards)
    cards.show()
    cards.show_report(SpeculationReport("ngram", drafted=40, accepted=30, passes=10), output_tokens=60)
    assert cards.isVisible() and not cards.note.isVisible()
    assert [card.text() for card in cards.cards.values()] == ["40", "30", "75%", "4.00"]
    assert cards.cards["drafted"].title() == "drafted (prompt lookup)"
    tooltip = cards.cards["per_pass"].toolTip()
    assert tooltip.startswith("(accepted + passes) / passes") and "10 verify passes" in tooltip
    assert "its 60 tokens took 30: 2.00 tokens a pass" in tooltip
    assert cards.speedup.isVisible() and "not measured" in cards.speedup.text()  # no ordinary step to weigh by
    cards.show_report(SpeculationReport("draft", drafted=40, accepted=30, passes=10), output_tokens=60)
    assert cards.cards["drafted"].title() == "drafted (draft model)"
    cards.clear()
    assert cards.isVisible() and [card.text() for card in cards.cards.values()] == ["–"] * 4
    assert cards.speedup.isVisible() and cards.speedup.text() == "TPOT speed-up: –"  # kept in place while streaming

    # 10 passes gave 40 tokens in 70 ms, where 4 ordinary steps took 20 ms (5 ms each): 200 ms of steps saved 130 ms.
    paid = SpeculationReport("ngram", 40, 30, 10, verify_s=0.07, steps=4, step_s=0.02)
    cards.show_report(paid, output_tokens=45)
    assert cards.speedup.text() == "TPOT speed-up 2.44× against this reply's own decode steps (saved 130 ms)"
    # 10 passes gave 12 tokens in 90 ms, 60 ms at the ordinary step: speculation cost 30 ms.
    unpaid = SpeculationReport("ngram", 40, 2, 10, verify_s=0.09, steps=4, step_s=0.02)
    cards.show_report(unpaid, output_tokens=17)
    assert cards.speedup.text() == "TPOT speed-up 0.73× against this reply's own decode steps (cost 30 ms)"

    note = "speculation is exact with greedy decoding (temperature 0) only: it was off for this reply"
    cards.show_report(SpeculationReport("ngram", 0, 0, 0, note), output_tokens=12)
    assert cards.note.isVisible() and cards.note.text() == f"Speculation asked for, not run: {note}."
    assert not any(card.isVisible() for card in cards.cards.values()) and not cards.speedup.isVisible()
    # A server's own counts (llama.cpp's draft_n, draft_n_accepted): where they came from, its passes not reported.
    counted = "counted by the server (its verify passes unreported)"
    cards.show_report(SpeculationReport("server", 20, 15, None, counted), output_tokens=40)
    assert not cards.note.isVisible() and all(card.isVisible() for card in cards.cards.values())
    assert [card.text() for card in cards.cards.values()] == ["20", "15", "75%", "not reported"]
    assert cards.speedup.text() == "TPOT speed-up: not reported (the server's steps are its own)"
    assert cards.cards["drafted"].title() == "drafted (by the server)" and counted in cards.cards["drafted"].toolTip()
    cards.show_report(None, output_tokens=12)
    assert not cards.isVisible()
