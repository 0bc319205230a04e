"""The list of chats is listed again at every message: it changes only what changed, and a refused rename is undone."""

from core.chats.store import ChatSummary
from gui.chats.chat_list import ChatListPanel


def _summaries(titles, counts=None):
    return [
        ChatSummary(
            chat_id=f"chat-{index}", title=title, updated_at="2026-12-03", message_count=(counts or {}).get(index, 2)
        )
        for index, title in enumerate(titles)
    ]


def _panel(qtbot) -> ChatListPanel:
    panel = ChatListPanel()
    qtbot.addWidget(panel)
    return panel


def test_listing_the_same_chats_again_keeps_their_items_and_updates_words_in_place(qtbot):
    panel = _panel(qtbot)
    panel.set_chats(_summaries(["Lighthouse", "Storm", "Keeper"]), "chat-0")
    items = [panel.list.item(row) for row in range(3)]
    panel.set_chats(_summaries(["Lighthouse at night", "Storm", "Keeper"], counts={0: 4}), "chat-0")
    assert [panel.list.item(row) for row in range(3)] == items  # no rebuild: the same items
    assert panel.titles() == ["Lighthouse at night", "Storm", "Keeper"]
    assert "4 messages" in panel.list.item(0).toolTip()
    assert panel.list.currentItem() is items[0]


def test_a_new_order_lists_the_chats_anew_with_the_open_one_selected(qtbot):
    panel = _panel(qtbot)
    panel.set_chats(_summaries(["Lighthouse", "Storm"]), "chat-0")
    summaries = _summaries(["Lighthouse", "Storm"])
    panel.set_chats([summaries[1], summaries[0]], "chat-1")
    assert panel.chat_ids() == ["chat-1", "chat-0"]
    assert panel.list.currentItem().text() == "Storm"


def test_a_new_chat_at_the_top_is_one_item_inserted_and_the_others_stay(qtbot):
    panel = _panel(qtbot)
    panel.set_chats(_summaries(["Lighthouse", "Storm"]), "chat-0")
    items = [panel.list.item(row) for row in range(2)]
    new = ChatSummary(chat_id="chat-new", title="Birds", updated_at="2026-12-05", message_count=1)
    older = _summaries(["Lighthouse", "Storm"])
    panel.set_chats([new, *older], "chat-new")
    assert panel.chat_ids() == ["chat-new", "chat-0", "chat-1"]
    assert panel.titles() == ["Birds", "Lighthouse", "Storm"]
    assert "1 messages" in panel.list.item(0).toolTip()
    assert [panel.list.item(row) for row in (1, 2)] == items  # not listed anew
    assert panel.list.currentItem().text() == "Birds"


def test_an_older_chat_that_gets_a_message_moves_to_the_top_alone(qtbot):
    panel = _panel(qtbot)
    panel.set_chats(_summaries(["Lighthouse", "Storm", "Keeper"]), "chat-0")
    items = [panel.list.item(row) for row in range(3)]
    summaries = _summaries(["Lighthouse", "Storm", "Keeper at dawn"], counts={2: 4})
    panel.set_chats([summaries[2], summaries[0], summaries[1]], "chat-2")
    assert panel.chat_ids() == ["chat-2", "chat-0", "chat-1"]
    assert panel.titles() == ["Keeper at dawn", "Lighthouse", "Storm"]
    assert "4 messages" in panel.list.item(0).toolTip()
    assert [panel.list.item(row) for row in range(3)] == [items[2], items[0], items[1]]
    assert panel.list.currentItem() is items[2]
    asked = []
    panel.rename_requested.connect(lambda chat_id, title: asked.append((chat_id, title)))
    panel.list.item(0).setText("Keeper")  # as an edit in the list ends: the moved item still names its chat
    assert asked == [("chat-2", "Keeper")]


def test_a_rename_the_store_refused_shows_the_kept_title_at_the_next_listing(qtbot):
    panel = _panel(qtbot)
    asked = []
    panel.rename_requested.connect(lambda chat_id, title: asked.append((chat_id, title)))
    panel.set_chats(_summaries(["Lighthouse", "Storm"]), "chat-0")
    panel.list.item(1).setText("Storm at sea")  # as an edit in the list ends
    assert asked == [("chat-1", "Storm at sea")]
    panel.set_chats(_summaries(["Lighthouse", "Storm"]), "chat-0")  # the store kept the old title
    assert panel.titles() == ["Lighthouse", "Storm"]


def test_a_title_longer_than_the_list_is_cut_with_an_ellipsis_and_whole_in_its_tooltip(qtbot):
    from PySide6.QtCore import Qt

    panel = _panel(qtbot)
    title = "Explain in a few sentences why streaming makes a chatbot feel faster."
    panel.set_chats(_summaries([title]), "chat-0")
    panel.resize(90, 300)
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.list.textElideMode() == Qt.TextElideMode.ElideRight
    assert not panel.list.horizontalScrollBar().isVisible()  # no strip under the list for one long line
    assert title in panel.list.item(0).toolTip()
