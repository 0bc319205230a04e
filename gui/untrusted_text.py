"""Text from a model, a server or a file, shown so that it can name no resource the window would load.

Qt reads any local file an image names in rich text (a reply's `![x](file:///dev/zero)` read until std::bad_alloc),
and treats a label's or tooltip's text as rich text when it merely looks like HTML.
"""

from __future__ import annotations

import html

from PySide6 import QtGui
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QImage, QTextCharFormat, QTextCursor, QTextDocument, QTextFormat
from PySide6.QtWidgets import QLabel

# Raw HTML in a reply is shown as the characters it is: <img>, <link> and <style> would name resources, and
# model output is untrusted input.
REPLY_MARKDOWN = QTextDocument.MarkdownFeature.MarkdownDialectGitHub | QTextDocument.MarkdownFeature.MarkdownNoHTML


class NoResourceDocument(QTextDocument):
    """A document that loads nothing a URL in it names.

    Qt's own loadResource reads any local file an image or stylesheet names (file:///dev/zero read until
    std::bad_alloc, a FIFO blocked the GUI thread for good); answering here, for every URL, means it never runs.
    An image gets a blank pixel, not nothing: given no image, Qt's image handler loads the path itself.
    """

    def loadResource(self, resource_type: int, name: QUrl | str):  # noqa: N802 - Qt's name
        if resource_type == QTextDocument.ResourceType.ImageResource:
            return _BLANK_PIXEL
        return ""


def _blank_pixel() -> QImage:
    pixel = QImage(1, 1, QImage.Format.Format_ARGB32)
    pixel.fill(0)
    return pixel


_BLANK_PIXEL = _blank_pixel()


def insert_untrusted_markdown(cursor: QTextCursor, markdown: str) -> None:
    """Insert markdown at cursor, each image in it shown as a link carrying its alt text, never loaded."""
    start = cursor.position()
    cursor.insertMarkdown(markdown, REPLY_MARKDOWN)
    _images_as_links(cursor.document(), start, cursor.position())


def _images_as_links(document: QTextDocument, start: int, end: int) -> None:
    images: list[tuple[int, int, str, str]] = []  # position, length, source, alt text
    block = document.findBlock(start)
    while block.isValid() and block.position() <= end:
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            fragment_format = fragment.charFormat()
            if fragment_format.isImageFormat() and start <= fragment.position() < end:
                image = fragment_format.toImageFormat()
                alt = str(image.property(QTextFormat.Property.ImageAltText) or "")
                images.append((fragment.position(), fragment.length(), image.name(), alt))
            iterator += 1
        block = block.next()
    for position, length, source, alt in reversed(images):  # from the end, so earlier positions stay valid
        cursor = QTextCursor(document)
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        link = QTextCharFormat()
        link.setAnchor(True)
        link.setAnchorHref(source)
        link.setFontUnderline(True)
        words = f"[image: {alt.strip() or source}]"
        cursor.insertText(words * length, link)  # one object character per image: identical neighbours share a fragment


def plain_label(text: str = "") -> QLabel:
    """A label whose text is never read as HTML: for messages that carry a server's, a model's or a file's words."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def plain_tooltip(text: str) -> str:
    """A tooltip showing text as written: Qt renders a tooltip that looks like HTML as HTML, <img> included."""
    if not QtGui.Qt.mightBeRichText(text) and "&" not in text:
        return text
    return "<qt>" + html.escape(text).replace("\n", "<br>") + "</qt>"
