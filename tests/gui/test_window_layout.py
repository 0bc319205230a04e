"""The chat window on a laptop screen: the settings fold away, and each plot keeps room for its points (issue 41)."""

from PySide6.QtCore import QRect, QSize, Qt

from gui.window_size import initial_window_size

# Each of the meter's plots keeps this many pixels for its points. On a 1400 x 950 screen the interval plot kept 31,
# a strip; the settings took a third of the chat's column for good.
LEAST_DATA_PX = 120
LAPTOP = QSize(1366, 768)
# What the window opens at on that laptop, under a 27-pixel panel: smaller still.
LAPTOP_OPENING = initial_window_size(QRect(0, 27, 1366, 741))


def _reply(qtbot, window) -> None:
    window.chat_panel.input_box.setPlainText("Say hello.")
    with qtbot.waitSignal(window.reply_finished, timeout=60_000):
        window.send_message()


def _plots(window):
    meter = window.meter
    return {"intervals": meter.interval_plot, "what the user saw": meter.visible_plot, "this chat": meter.history_plot}


def _data_heights(qtbot, window) -> dict[str, float]:
    """Each plot's data area, seen as a user sees it: the tab holding it picked."""
    views, heights = window.meter.views, {}
    for name, plot in _plots(window).items():
        views.show_view(plot)
        qtbot.waitUntil(plot.isVisible, timeout=5_000)
        # Laid out once the window has handled the resize and the tab change.
        qtbot.waitUntil(lambda plot=plot: plot.getViewBox().height() > 0, timeout=5_000)
        heights[name] = plot.getViewBox().height()
    views.setCurrentIndex(0)
    return heights


def _meter_scrolls(window) -> bool:
    return window.meter.parentWidget().parentWidget().verticalScrollBar().isVisible()


def _settle(qtbot, window, size: QSize) -> None:
    """At that size, or as near as the window's least width allows (a little over 1229 pixels wide)."""
    window.resize(size)
    wanted = size.expandedTo(window.minimumSizeHint())
    qtbot.waitUntil(lambda: window.size() == wanted and window.meter.views.height() > 0, timeout=5_000)


def test_each_plot_keeps_120_pixels_for_its_points_on_a_1366_by_768_screen(qtbot, tiny_window):
    window = tiny_window
    _reply(qtbot, window)
    for size in (LAPTOP, LAPTOP_OPENING):
        _settle(qtbot, window, size)
        for folded in (True, False):
            window.chat_panel.settings_panel.set_folded(folded)
            heights = _data_heights(qtbot, window)
            assert min(heights.values()) >= LEAST_DATA_PX, (size, folded, heights)
            # The meter is whole: nothing to scroll to while a reply streams.
            assert not _meter_scrolls(window), (size, folded)


def test_the_saved_chats_show_a_short_title_whole_on_a_laptop(qtbot, tiny_window):
    """At 16 characters the model box, with the style's 80-pixel buttons, held the chat's column so wide that the
    sidebar kept 74 pixels on a 1366-pixel laptop: "What is ..." for every chat."""
    window = tiny_window
    window.chat_panel.input_box.setPlainText("What is prefill?")
    with qtbot.waitSignal(window.reply_finished, timeout=60_000):
        window.send_message()
    _settle(qtbot, window, LAPTOP_OPENING)
    chats = window.saved_chats.chat_list.list
    title = chats.item(0).text()
    assert title == "What is prefill?"
    qtbot.waitUntil(lambda: chats.visualItemRect(chats.item(0)).width() > 0, timeout=5_000)
    # Elided titles end in "…"; the item's text rectangle holds the whole title instead.
    assert chats.viewport().width() >= chats.fontMetrics().horizontalAdvance(title) + 2 * chats.spacing(), (
        chats.viewport().width()
    )
    # The squeezed row still shows every button's word.
    panel = window.chat_panel.settings_panel
    for button in (panel.browse_button, panel.server_button, panel.load_button):
        assert button.width() >= button.fontMetrics().horizontalAdvance(button.text()), button.text()


def test_each_plots_bottom_label_is_drawn_whole_inside_the_plot(qtbot, tiny_window):
    """pyqtgraph sets a bottom axis's label 5 pixels below the axis: at the meter's foot, under Xvfb, "seconds since
    Send" was cut through its middle by the window's status bar."""
    window = tiny_window
    _reply(qtbot, window)
    _settle(qtbot, window, LAPTOP_OPENING)
    for plot in _plots(window).values():
        window.meter.views.show_view(plot)
        qtbot.waitUntil(plot.isVisible, timeout=5_000)
        label = plot.getAxis("bottom").label
        qtbot.waitUntil(lambda plot=plot: plot.getViewBox().height() > 0, timeout=5_000)
        assert label.mapRectToScene(label.boundingRect()).bottom() <= plot.height(), label.toPlainText()


def test_the_prompt_cache_map_cuts_none_of_its_text(qtbot, tiny_window):
    window = tiny_window
    _reply(qtbot, window)
    # The second reply's row then says why nothing was reused, on a line.
    window.chat_panel.cache_toggle.setChecked(False)
    _reply(qtbot, window)
    cache_map = window.meter.cache_map
    window.meter.views.show_view(cache_map)
    for size in (LAPTOP_OPENING, QSize(1260, 855)):
        _settle(qtbot, window, size)
        qtbot.waitUntil(cache_map.isVisible, timeout=5_000)
        assert [row.number for row in cache_map.visible_rows()] == [1, 2]
        # The reason used to be cut beside the bar, to "nothing cached yet: ..." or "prompt cache off: the wh...".
        assert cache_map.rows[1].shows_reason and cache_map.rows[1].reason.startswith("prompt cache off")
        assert cache_map.cut_texts() == [], size


def test_the_settings_fold_away_give_the_chat_their_room_and_come_back(qtbot, tiny_window):
    window = tiny_window
    _settle(qtbot, window, LAPTOP)
    panel = window.chat_panel.settings_panel
    fields = (panel.model_box, panel.load_button, panel.system_prompt, panel.max_new_tokens, panel.seed)
    assert all(field.isVisible() for field in fields)
    unfolded_transcript = window.chat_panel.transcript.height()
    transcript_width = window.chat_panel.transcript.width()
    qtbot.mouseClick(panel.fold_header.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not any(field.isVisible() for field in fields), timeout=5_000)
    # Folded, one line says what they are; the chat's transcript takes the room they had.
    summary = panel.fold_header.summary.text()
    assert summary.startswith("embedded · ")
    assert "max new 5" in summary and "temp" in summary and "system" not in summary
    # A system prompt changes every reply: the folded line says so early, where its cut does not reach.
    panel.system_prompt.setPlainText("You are a pirate.\nAnswer   in rhymes, always, whatever is asked.")
    summary = panel.fold_header.summary.text()
    assert summary.split(" · ")[2] == "system “You are a pirate. Answe…”"  # 24 characters, the cut one of them
    assert panel.fold_header.summary.toolTip().startswith(summary[:40])
    panel.system_prompt.setPlainText("")
    assert "system" not in panel.fold_header.summary.text()
    qtbot.waitUntil(lambda: window.chat_panel.transcript.height() >= unfolded_transcript + 100, timeout=5_000)
    assert (
        window.chat_panel.transcript.width() == transcript_width
    )  # taller, not narrower: the chat list beside it kept its width
    # A load's error is shown folded too: the user must not miss it.
    panel.show_load_error("Could not load the model: no such file.")
    assert panel.load_message.isVisible()
    qtbot.mouseClick(panel.fold_header.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: all(field.isVisible() for field in fields), timeout=5_000)
    assert panel.fold_header.summary.text() == ""


def test_the_window_remembers_the_settings_folded(qtbot, tiny_window, open_window):
    qtbot.mouseClick(tiny_window.chat_panel.settings_panel.fold_header.button, Qt.MouseButton.LeftButton)
    tiny_window.close()
    again = open_window()
    try:
        panel = again.chat_panel.settings_panel
        assert panel.folded and not panel.model_box.isVisible()
        qtbot.mouseClick(panel.fold_header.button, Qt.MouseButton.LeftButton)
        assert panel.model_box.isVisible()
    finally:
        again.close()
    third = open_window(show=False)
    assert not third.chat_panel.settings_panel.folded  # unfolding is remembered too


def test_before_the_first_reply_the_token_axis_spans_max_new_tokens(qtbot, tiny_window):
    """The window's first reply streams on axes sized for its budget (gui/meter/first_reply_axes.py); later replies
    start where the last ended."""
    tokens = tiny_window.chat_panel.settings_panel.max_new_tokens
    axis = tiny_window.meter.interval_plot.getViewBox()
    assert axis.viewRange()[0][1] < 40  # the tiny window's 5 tokens: the smallest step, 32
    tokens.setValue(200)
    assert 200 <= axis.viewRange()[0][1] < 300  # 256, the step that holds it
    tokens.setValue(5)
    _reply(qtbot, tiny_window)
    fitted = axis.viewRange()[0][1]
    tokens.setValue(1000)
    assert axis.viewRange()[0][1] == fitted
