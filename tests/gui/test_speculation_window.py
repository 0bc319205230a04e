"""Speculative decoding seen in the window, on the embedded model as a new user runs it (native precision, the C
kernels): the drafts' card, their crosses on the interval plot and their tint in the transcript, live and reopened."""

import pytest

from gui.chat.draft_tint import drafted_spans
from gui.meter.interval_plot import DRAFT_LEGEND
from gui.meter.speculation_cards import tokens_per_pass

pytestmark = pytest.mark.model
REPLY_TIMEOUT_MS = 180_000
PARAGRAPH = (
    "The river runs past the old mill, where the children play in summer and the dogs sleep in the shade of the "
    "tall oak trees. In autumn the leaves fall into the water and drift slowly down towards the sea."
)


@pytest.fixture
def native_window(qtbot, native_model):
    """The chat window with the embedded model in native precision: speculation runs on its C kernels."""
    from gui.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.models.accept_model(native_model)
    window.show()
    qtbot.waitExposed(window)
    yield window
    window.close()
    assert not window.frame_timer.isActive()


def _ask(qtbot, window, text: str):
    window.chat_panel.input_box.setPlainText(text)
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        window.send_message()
    return blocker.args[0]


def _words(runs: list[str]) -> list[str]:
    """Runs of text as a reader compares them: spaces and line breaks alike, runs of only spaces left out."""
    return [" ".join(run.split()) for run in runs if run.strip()]


def _check_shown(window, trace) -> None:
    """The card says the trace's report, the plot has a purple cross per accepted draft, the tint covers their words."""
    report = trace.speculation
    meter = window.meter
    cards = meter.speculation_cards
    assert cards.isVisible() and not cards.note.isVisible()
    shown = {key: card.value for key, card in cards.cards.items()}
    assert shown == {
        "drafted": report.drafted,
        "accepted": report.accepted,
        "acceptance": report.accepted / report.drafted,
        "per_pass": (report.accepted + report.passes) / report.passes,
    }
    assert cards.cards["acceptance"].text() == f"{report.accepted / report.drafted * 100:.0f}%"
    assert cards.cards["per_pass"].text() == f"{tokens_per_pass(report):.2f}"
    assert f"{report.passes:,} verify passes" in cards.cards["per_pass"].toolTip()

    plot = meter.interval_plot
    assert plot.drafted_count() == len(trace.drafted_indices)
    assert list(plot.draft_item.getData()[0]) == trace.drafted_indices
    assert plot.marker_count() == trace.output_tokens - 1 - len(trace.drafted_indices)  # the model's own steps
    assert DRAFT_LEGEND in [label.text for _sample, label in plot.getPlotItem().legend.items]
    # Each verify pass: a tick on the token its time landed on, a red "-r" where it rejected r drafts.
    marks = report.pass_marks
    assert len(marks) == report.passes and sum(rejected for _, _, rejected in marks) == report.drafted - report.accepted
    shown = [(token, rejected) for token, _, rejected in marks if 1 <= token < trace.output_tokens]
    assert list(plot.pass_item.getData()[0]) == [token for token, _ in shown]
    labels = [label.toPlainText() for label in plot.pass_labels if label.isVisible()]
    assert labels == [f"-{rejected}" for _, rejected in shown if rejected][: len(plot.pass_labels)]

    transcript = window.chat_panel.transcript
    expected = [trace.text[start:end] for start, end in drafted_spans(trace.token_texts, trace.drafted_indices)]
    tint = transcript.tint_action
    if tint.isChecked():
        tint.trigger()
    assert transcript.tinted_text() == []
    tint.trigger()  # View → Tint accepted draft tokens
    assert _words(transcript.tinted_text()) == _words(expected)
    tint.trigger()
    assert transcript.tinted_text() == []


def test_a_copying_reply_shows_its_accepted_drafts_on_the_card_the_plot_and_the_transcript(qtbot, native_window):
    window = native_window
    fields = window.chat_panel.settings_panel.speculation
    fields.choice.setCurrentIndex(fields.choice.findData("ngram"))
    window.chat_panel.settings_panel.max_new_tokens.setValue(60)
    window.chat_panel.transcript.tint_action.trigger()  # on before the reply: its drafts are tinted as they stream in
    tinted_live = []
    window.live.frame_shown.connect(
        lambda: tinted_live.append(window.chat_panel.transcript.tinted_text()) if window.generating else None
    )
    trace = _ask(qtbot, window, f"Repeat this text exactly, word for word: {PARAGRAPH}")
    assert any(tinted_live) and all(run in PARAGRAPH for seen in tinted_live for run in _words(seen))
    report = trace.speculation
    assert report is not None and report.note is None and report.method == "ngram"
    assert report.accepted > 10 and len(trace.drafted_indices) == report.accepted  # a copy: most drafts kept
    assert trace.text.strip()[:30] in PARAGRAPH
    _check_shown(window, trace)

    # Reopened from its file (the trace codec): the same card, crosses and tint.
    chat_id = window.saved_chats.current_chat_id
    assert window.saved_chats.keeper.saver.flush(10)
    window.new_chat()
    assert not window.meter.speculation_cards.isVisible() and window.meter.interval_plot.drafted_count() == 0
    assert window.saved_chats.open_chat(chat_id)
    _check_shown(window, window.saved_chats.records[-1].trace)
    assert window.saved_chats.records[-1].trace.drafted_indices == trace.drafted_indices


def test_speculation_asked_for_where_it_cannot_run_says_why_and_a_reply_without_it_hides_the_card(qtbot, window):
    # The window fixture's model is float32 on torch: no C kernels to verify drafts on.
    fields = window.chat_panel.settings_panel.speculation
    fields.choice.setCurrentIndex(fields.choice.findData("ngram"))
    window.chat_panel.settings_panel.max_new_tokens.setValue(6)
    trace = _ask(qtbot, window, "Say yes.")
    cards = window.meter.speculation_cards
    assert trace.speculation is not None and trace.speculation.note
    assert cards.isVisible() and cards.note.isVisible()
    assert cards.note.text() == f"Speculation asked for, not run: {trace.speculation.note}."
    assert not any(card.isVisible() for card in cards.cards.values())
    assert trace.drafted_indices == [] and window.meter.interval_plot.drafted_count() == 0

    fields.choice.setCurrentIndex(fields.choice.findData("off"))
    trace = _ask(qtbot, window, "Say no.")
    assert trace.speculation is None and not cards.isVisible()
