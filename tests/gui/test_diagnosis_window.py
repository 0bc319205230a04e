"""The diagnosis in the window, as a user meets it: the line under the cards saying why the last reply was slow, the
list it opens, the history plot's mark, and the findings kept in the saved chat."""

from __future__ import annotations

import json
import os

import pytest
from PySide6.QtCore import Qt

from core.chats.store import ChatStore
from core.diagnosis.diagnose import HEALTHY
from core.timing.cpu_share import CONTENDED_SHARE
from tests.diagnosis.test_induced_causes import busy_programs

pytestmark = pytest.mark.model
# Generous: a reply on a loaded 2-core machine with busy programs of the test's own can take minutes; a timeout
# here says the reply never came, not that it was slow.
REPLY_TIMEOUT_MS = 600_000
LONG_SYSTEM = "You are a kind assistant. " + " ".join(f"Rule {n}: answer in a few plain words." for n in range(1, 25))


def ask(qtbot, window, text, tokens=6):
    window.chat_panel.settings_panel.max_new_tokens.setValue(tokens)
    window.chat_panel.input_box.setFocus()
    qtbot.keyClicks(window.chat_panel.input_box, text)
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    return blocker.args[0]


def test_the_line_under_the_cards_says_why_and_opens_to_the_list(qtbot, window, tmp_path):
    line = window.meter.diagnosis_line
    assert not line.isVisible()  # nothing diagnosed yet
    window.chat_panel.settings_panel.system_prompt.setPlainText(LONG_SYSTEM)
    ask(qtbot, window, "Name a colour.")
    ask(qtbot, window, "Name another one.")
    window.chat_panel.settings_panel.system_prompt.setPlainText(
        "Answer in French. " + LONG_SYSTEM
    )  # the start of the chat edited
    edited = ask(qtbot, window, "And a third?")

    assert edited.cache_reason.startswith("system prompt changed at token ")
    finding = edited.diagnosis[0]
    assert finding.kind == "prompt_cache"
    assert line.isVisible() and line.top.text().startswith("Why: TTFT ")
    assert f"{edited.prefilled_tokens:,} of {edited.prompt_tokens:,} prompt tokens were prefilled" in line.top.text()
    assert not line.details.isVisible()
    line.toggle.click()
    assert line.details.isVisible() and line.details.text().startswith(f"1. {finding.summary}\nCause: ")
    assert window.meter.history_plot.found_points >= 1

    window.export_traces_json(tmp_path / "chat.json")
    exported = json.loads((tmp_path / "chat.json").read_text(encoding="utf-8"))["replies"][-1]["diagnosis"]
    assert exported[0]["kind"] == "prompt_cache" and exported[0]["evidence"] == finding.evidence
    assert {"cause", "evidence", "figure", "advice"} <= set(exported[0])
    assert window.saved_chats.keeper.saver.flush(10)
    saved = ChatStore().load(window.saved_chats.current_chat_id).replies[-1].trace
    assert saved.diagnosis == edited.diagnosis


@pytest.mark.subprocess
def test_a_busy_machine_is_named_in_the_line(qtbot, window):
    ask(qtbot, window, "Warm up.", tokens=2)
    with busy_programs(os.cpu_count() or 2):  # one a core: others take half the machine
        trace = ask(qtbot, window, "Tell me about the sea.", tokens=40)
    assert trace.cpu_share < CONTENDED_SHARE
    kinds = [finding.kind for finding in trace.diagnosis]
    assert "contention" in kinds and HEALTHY not in kinds
    assert "Other programs took " in window.meter.diagnosis_line.details.text()


def test_the_last_line_stays_greyed_while_the_next_reply_runs(qtbot, window):
    """Hidden while a reply ran, the line let the plots below grow as each reply started and shrink as it ended."""
    line = window.meter.diagnosis_line
    ask(qtbot, window, "Name a colour.")
    assert line.isVisible() and not line.stale
    shown = line.top.text()
    window.meter.layout().activate()  # the line's arrival laid out now, not at the event loop's next turn
    plot_height = window.meter.interval_plot.height()
    seen_running = []

    def running(_tokens) -> None:
        window.meter.layout().activate()
        seen_running.append(
            (line.isVisible(), line.stale, line.top.text(), line.top.toolTip(), window.meter.interval_plot.height())
        )

    window.replies.tokens_received.connect(running)
    ask(qtbot, window, "Name another one.", tokens=12)
    visible, stale, text, tip, height = seen_running[0]
    assert visible and stale and text == shown  # the same words, greyed
    assert tip.startswith("The last reply's diagnosis")
    assert height == plot_height  # the plots kept their size
    assert line.isVisible() and not line.stale and "color: #9a9a9a" not in line.top.styleSheet()
