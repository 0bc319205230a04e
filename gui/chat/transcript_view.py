"""The chat transcript: turns shown apart, replies appended in O(1) per token, then rendered as Markdown; the words of
accepted draft tokens (speculative decoding) tinted on request."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QMimeData, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QAction, QBrush, QColor, QFont, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextOption
from PySide6.QtWidgets import QTextBrowser

from gui.chat.draft_tint import tinted_runs
from gui.chat.long_runs import break_long_runs, without_breaks
from gui.chat.text_repaint import TextRepaint
from gui.untrusted_text import NoResourceDocument, insert_untrusted_markdown

USER_BACKGROUND = QColor("#e8f0fe")
ASSISTANT_BACKGROUND = QColor("#ffffff")
NOTICE_COLOR = QColor("#8a5300")
ERROR_COLOR = QColor("#b00020")
# A pale shade of the interval plot's colour for accepted drafts (gui/meter/interval_plot.py's DRAFT_COLOR).
DRAFT_TINT = QColor("#e9d7fc")
# A longer message is shown cut to this many characters (the chat keeps all of it): laying out
# and scrolling a very large document would stall the window.
PREVIEW_CHARS = 20_000
# Qt lays out and repaints a whole paragraph whenever it changes, so a live reply's paragraph is
# cut into blocks of this many wrapped lines: each token then costs the same at 100 or 10,000
# characters. Cuts fall at wrap points, so they do not show; the finished reply replaces them.
# One line a block: a frame's insert reshapes one line, not six (0.12 against 0.19-0.21 ms a frame
# in a fresh chat, 0.22-0.24 against 0.31-0.34 scrolled, measured with no model running).
LIVE_BLOCK_LINES = 1
# The transcript's scroll bar moves with each new line of a live reply. Fusion (Qt's style where the desktop sets
# none) paints its groove and handle with gradients, and Qt's raster engine blends a fill taller than 96 rows on
# its thread pool: 1,500-2,000 context switches a 400-token reply, each a wake and a wait on the window's thread.
# Flat colours are filled in place (5 switches a reply); the window's own CPU, alternated reply by reply in one
# run, 0.0444 against 0.0463 and 0.0485 against 0.0502 of a core (medians of 6 each, benchmarks/window_cpu.py).
FLAT_SCROLL_BAR = (
    "QScrollBar:vertical { background: palette(base); width: 12px; margin: 0; }"
    " QScrollBar::handle:vertical { background: palette(mid); min-height: 24px; margin: 2px; border-radius: 4px; }"
    " QScrollBar::handle:vertical:hover { background: palette(dark); }"
    " QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical { height: 0; }"
    " QScrollBar::add-page:vertical, QScrollBar::sub-page:vertical { background: none; }"
)


class TranscriptView(QTextBrowser):
    """Read-only transcript. Each reply ends with a Copy link that emits copy_requested(message_index)."""

    copy_requested = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        # Replies are untrusted: an image or stylesheet they name must never be read from disk or the network.
        self.setDocument(NoResourceDocument(self))
        # A new document keeps undo history, whatever the view's default: every token's insert kept a step (18,000
        # over 150 replies), and each insert cost 6-10% more for it. Nothing in a transcript is ever undone.
        self.setUndoRedoEnabled(False)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText("Ask something below. Enter sends, Shift+Enter adds a line.")
        # A word wider than the view wraps anywhere instead of scrolling sideways. Plain WordWrap was
        # the quadratic one while streaming: an unbroken run never wrapped, so the live block was never
        # cut and each token re-laid out all of it (7 ms a token at 50,000 digits, against 0.1 ms
        # here). The finished reply gets zero-width break points in long runs (break_long_runs),
        # since laying out one long word is quadratic in this mode.
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.verticalScrollBar().setStyleSheet(FLAT_SCROLL_BAR)
        self.text_repaint = TextRepaint(self)
        self._reply_start: int | None = None  # where the live reply's text begins
        self._reply_cursor: QTextCursor | None = None  # stays at the live reply's end as text is added
        self._plain = QTextCharFormat()
        self._live_tint = QTextCharFormat()
        self._live_tint.setBackground(DRAFT_TINT)
        self._last_reply_turn_start: int | None = None  # where the last reply's header begins
        # The rendered words of accepted drafts, every reply's, as (start, end) positions: the transcript only ever
        # changes at its end, so they stay put. (A QTextCursor's selection would grow with text added at its end.)
        self._draft_runs: list[tuple[int, int]] = []
        self.tint_action = QAction("Tint accepted draft tokens", self)
        self.tint_action.setCheckable(True)
        self.tint_action.setToolTip(
            "Speculative decoding: give the words of accepted draft tokens a purple background. Each cost no decode "
            "step of its own: the model checked it in one pass with the tokens before it."
        )
        self.tint_action.toggled.connect(self._show_tint)

    # -- building turns -------------------------------------------------------------------------

    def add_user_turn(self, text: str, message_index: int | None = None) -> None:
        self._append_header("You", "#1a4fa0", USER_BACKGROUND)
        if len(text) <= PREVIEW_CHARS:
            self._append_plain(break_long_runs(text), USER_BACKGROUND)
            return
        self._append_plain(break_long_runs(text[:PREVIEW_CHARS]), USER_BACKGROUND)
        self._append_plain(
            f"… {len(text) - PREVIEW_CHARS:,} more characters not shown here; the whole "
            f"message ({len(text):,} characters) is in the chat.",
            USER_BACKGROUND,
            NOTICE_COLOR,
            italic=True,
        )
        if message_index is not None:
            cursor = self._end_cursor()
            cursor.insertBlock(self._block_format(USER_BACKGROUND), QTextCharFormat())
            cursor.insertHtml(f'<a href="copy:{message_index}">Copy the whole message</a>')

    def begin_assistant_turn(self) -> None:
        self._last_reply_turn_start = self._end_position()
        self._append_header("Assistant", "#1d6b35", ASSISTANT_BACKGROUND)
        cursor = self._end_cursor()
        cursor.insertBlock(self._block_format(ASSISTANT_BACKGROUND), QTextCharFormat())
        self._reply_start = cursor.position()
        self._reply_cursor = cursor
        self._scroll_to_end()

    def append_reply_text(self, delta: str, drafted: Sequence[tuple[int, int]] = ()) -> None:
        """Insert at the end only: the rest of the document is never touched, so cost is per token. drafted: where
        accepted drafts lie in delta, tinted as they arrive (the tint's switch reaches text already shown when the
        reply is rendered at its end)."""
        if delta:
            # One cursor kept at the reply's end: finding the end anew cost as much as the insert.
            cursor = self._reply_cursor if self._reply_cursor is not None else self._end_cursor()
            at = 0
            for start, end in drafted:
                cursor.insertText(delta[at:start], self._plain)
                cursor.insertText(delta[start:end], self._live_tint)
                at = end
            cursor.insertText(delta[at:], self._plain)
            self._keep_live_block_short(cursor)
            self._scroll_to_end()

    def _keep_live_block_short(self, cursor: QTextCursor) -> None:
        block = cursor.block()
        layout = block.layout()
        if layout is None or layout.lineCount() <= LIVE_BLOCK_LINES:
            return
        last_line = layout.lineAt(layout.lineCount() - 1)
        cut = QTextCursor(self.document())
        cut.setPosition(block.position() + last_line.textStart())
        cut.insertBlock(block.blockFormat(), self._plain)

    def finish_assistant_turn(
        self,
        text: str,
        message_index: int | None,
        note: str | None = None,
        drafted: Sequence[tuple[int, int]] = (),
    ) -> None:
        """Replace the live plain text with the rendered Markdown reply, once. drafted: where the accepted draft
        tokens lie in text, (start, end) pairs (gui/chat/draft_tint.py's drafted_spans)."""
        cursor = self._end_cursor()
        if self._reply_start is not None:
            cursor.setPosition(self._reply_start)
            cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
        if text:
            start = cursor.position()
            insert_untrusted_markdown(cursor, break_long_runs(text))
            if drafted:
                self._keep_draft_runs(text, start, cursor.position(), drafted)
        self._reply_start = None
        self._reply_cursor = None
        if note:
            self._append_plain(note, ASSISTANT_BACKGROUND, NOTICE_COLOR, italic=True)
        if message_index is not None:
            cursor = self._end_cursor()
            cursor.insertBlock(self._block_format(ASSISTANT_BACKGROUND), QTextCharFormat())
            cursor.insertHtml(f'<a href="copy:{message_index}">Copy reply</a>')
        self._scroll_to_end()

    def remove_last_reply(self) -> None:
        if self._last_reply_turn_start is None:
            return
        turn_start = self._last_reply_turn_start
        cursor = self._end_cursor()
        cursor.setPosition(turn_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._last_reply_turn_start = None
        self._reply_start = None
        self._reply_cursor = None
        self._draft_runs = [run for run in self._draft_runs if run[0] < turn_start]

    def add_notice(self, text: str, is_error: bool = False) -> None:
        self._append_plain(text, ASSISTANT_BACKGROUND, ERROR_COLOR if is_error else NOTICE_COLOR, italic=not is_error)
        self._scroll_to_end()

    def clear_transcript(self) -> None:
        self.clear()
        self._draft_runs.clear()
        self._reply_start = None
        self._reply_cursor = None
        self._last_reply_turn_start = None

    # -- accepted drafts ------------------------------------------------------------------------

    @property
    def tint_drafts(self) -> bool:
        return self.tint_action.isChecked()

    def tinted_text(self) -> list[str]:
        """The document's runs of tinted characters, as a reader sees them: empty while the tint is off."""
        runs: list[tuple[int, int]] = []
        block = self.document().begin()
        while block.isValid():
            iterator = block.begin()
            while not iterator.atEnd():
                fragment = iterator.fragment()
                background = fragment.charFormat().background()
                if background.style() != Qt.BrushStyle.NoBrush and background.color() == DRAFT_TINT:
                    if runs and runs[-1][1] == fragment.position():
                        runs[-1] = (runs[-1][0], fragment.position() + fragment.length())
                    else:
                        runs.append((fragment.position(), fragment.position() + fragment.length()))
                iterator += 1
            block = block.next()
        return [without_breaks(self._text_between(start, end)) for start, end in runs]

    def _text_between(self, start: int, end: int) -> str:
        cursor = QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        return cursor.selectedText()

    def _keep_draft_runs(self, text: str, start: int, end: int, drafted: Sequence[tuple[int, int]]) -> None:
        rendered = self.document().toRawText()[start:end]
        runs = [(start + run_start, start + run_end) for run_start, run_end in tinted_runs(text, rendered, drafted)]
        self._draft_runs.extend(runs)
        if self.tint_drafts:
            self._tint(runs, True)

    @Slot(bool)
    def _show_tint(self, on: bool) -> None:
        self._tint(self._draft_runs, on)

    def _tint(self, runs: list[tuple[int, int]], on: bool) -> None:
        tint = QTextCharFormat()
        # No brush, rather than no background property: a merge cannot take a property away.
        tint.setBackground(DRAFT_TINT if on else QBrush(Qt.BrushStyle.NoBrush))
        cursor = QTextCursor(self.document())
        for start, end in runs:
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(tint)

    # -- helpers --------------------------------------------------------------------------------

    def _append_header(self, label: str, color: str, background: QColor) -> None:
        cursor = self._end_cursor()
        header = QTextCharFormat()
        header.setFontWeight(QFont.Weight.Bold)
        header.setForeground(QColor(color))
        if not self.document().isEmpty():
            cursor.insertBlock(self._block_format(background, top_margin=10), header)
        else:
            cursor.setBlockFormat(self._block_format(background))
        cursor.insertText(label, header)

    def _append_plain(self, text: str, background: QColor, color: QColor | None = None, italic: bool = False) -> None:
        body = QTextCharFormat()
        if color is not None:
            body.setForeground(color)
        body.setFontItalic(italic)
        cursor = self._end_cursor()
        cursor.insertBlock(self._block_format(background), body)
        cursor.insertText(text, body)

    @staticmethod
    def _block_format(background: QColor, top_margin: int = 0) -> QTextBlockFormat:
        block = QTextBlockFormat()
        block.setBackground(background)
        block.setTopMargin(top_margin)
        return block

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _end_position(self) -> int:
        return self._end_cursor().position()

    def _scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def createMimeDataFromSelection(self) -> QMimeData:  # noqa: N802 - Qt's name
        """A copied selection leaves out the break points added for display."""
        mime = QMimeData()
        mime.setText(without_breaks(self.textCursor().selection().toPlainText()))
        return mime

    @Slot(QUrl)
    def _on_anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() == "copy" and url.path().isdigit():
            self.copy_requested.emit(int(url.path()))
