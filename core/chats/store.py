"""Saved chats on disk: one private JSON file per chat, listed, renamed, deleted, imported and exported."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import platformdirs

from core.atomic_file import atomic_write_bytes, ensure_private_dir, is_temp_file
from core.chats.chat_schema import MAX_CHAT_FILE_BYTES
from core.chats.disk_version import DiskVersion, digest
from core.chats.record import (
    CHAT_ID_PATTERN,
    ChatFileError,
    ChatRecord,
    clean_title,
    decode_document,
    encode_document,
    new_chat_id,
    utc_now,
)
from core.chats.safe_read import read_regular_file, read_regular_file_and_status

DATA_DIR_ENV = "LATENCYLAB_DATA_DIR"
CORRUPT_FOLDER = "corrupt"
# A temporary file this old belongs to no write in progress: a crash or a kill left it behind.
STALE_TEMP_AGE_S = 60.0


def data_root() -> Path:
    override = os.environ.get(DATA_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_data_dir("latencylab"))


def chats_folder() -> Path:
    return data_root() / "chats"


@dataclass(frozen=True)
class ChatSummary:
    chat_id: str
    title: str
    updated_at: str
    message_count: int


class ChatStore:
    """Reads and writes whole chats. notices collects what the user must be told (files moved aside)."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else chats_folder()
        self.notices: list[str] = []
        # Per chat, the file as this store last read or wrote it; another process's write shows as a difference.
        self._known: dict[str, DiskVersion] = {}
        # Chats whose later saves go to their conflict copy (see write_document).
        self._redirects: dict[str, str] = {}
        # The saver thread writes while the GUI thread may rename or import through the same store.
        self._lock = threading.RLock()

    def path_for(self, chat_id: str) -> Path:
        if not CHAT_ID_PATTERN.match(chat_id):
            raise ChatFileError(f"{chat_id[:80]!r} is not a valid chat id")
        return self.folder / f"{chat_id}.json"

    # -- reading --------------------------------------------------------------------------------

    def scan(self) -> list[ChatSummary]:
        """Every readable chat, newest first. Unreadable files are moved aside, each with a notice."""
        if not self.folder.is_dir():
            return []
        self._remove_stale_temp_files()
        summaries = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                record = self._read(path)
            except ChatFileError as error:
                self.quarantine(path, str(error))
                continue
            except OSError as error:
                self.notices.append(
                    f"The chat file {path.name} could not be opened ({error.strerror}); it was skipped."
                )
                continue
            summaries.append(ChatSummary(record.chat_id, record.title, record.updated_at, len(record.messages)))
        summaries.sort(key=lambda summary: (summary.updated_at, summary.chat_id), reverse=True)
        return summaries

    def load(self, chat_id: str) -> ChatRecord:
        """Raise ChatFileError (after moving the file aside) when the chat cannot be read."""
        path = self.path_for(chat_id)
        try:
            return self._read(path)
        except ChatFileError as error:
            notice = self.quarantine(path, str(error))
            raise ChatFileError(notice) from None
        except FileNotFoundError:
            raise ChatFileError(f"the chat {chat_id} no longer exists on disk") from None
        except OSError as error:
            raise ChatFileError(f"the chat file {path.name} could not be opened ({error.strerror})") from None

    def _read(self, path: Path) -> ChatRecord:
        # Only regular files, never through a link: a FIFO named x.json hung the launch, a link to /dev/zero
        # exhausted memory, and a link could point anywhere on the machine.
        data, status = read_regular_file_and_status(path, MAX_CHAT_FILE_BYTES)
        record = decode_document(data)
        if record.chat_id != path.stem:
            raise ChatFileError(f"the file name does not match the chat id {record.chat_id!r}")
        with self._lock:
            self._known[record.chat_id] = DiskVersion.of(data, status)
        return record

    # -- writing --------------------------------------------------------------------------------

    def encode(self, record: ChatRecord) -> bytes:
        return encode_document(record.to_document())

    def write_bytes(self, chat_id: str, data: bytes) -> None:
        """The one place chat files are written. It does not look for other writers: see write_document."""
        path = self.path_for(chat_id)
        ensure_private_dir(self.folder)
        atomic_write_bytes(path, data)
        with self._lock:
            self._known[chat_id] = DiskVersion.of(data, os.stat(path))

    def write_document(self, document: dict) -> str | None:
        """Save a chat document unless another process changed its file since this store read or wrote it.

        Then this version is written as a new chat, a conflict copy, and later saves of the chat follow
        it there; the other process's file is left as it is. Returns a notice for the user in that case.
        Two windows on one data folder each keep every turn they wrote.
        """
        with self._lock:
            chat_id = self._redirects.get(document["id"], document["id"])
            if chat_id != document["id"] or not self._changed_on_disk(chat_id):
                self.write_bytes(chat_id, encode_document({**document, "id": chat_id}))
                return None
            copy_id = new_chat_id()
            title = clean_title(f"{document['title']} (conflict copy)")
            self.write_bytes(
                copy_id, encode_document({**document, "id": copy_id, "title": title, "title_is_custom": True})
            )
            self._redirects[document["id"]] = copy_id
        return (
            f"The chat \u201c{document['title']}\u201d was changed by another Latency Lab window after this one "
            f"opened it. To lose neither, this window's version was saved as a new chat, \u201c{title}\u201d, "
            f"and its further changes go there."
        )

    def save(self, record: ChatRecord) -> str | None:
        notice = self.write_document(record.to_document())
        if notice:
            self.notices.append(notice)
        return notice

    def delete(self, chat_id: str) -> None:
        with self._lock:
            self._known.pop(chat_id, None)
            self._redirects.pop(chat_id, None)
            with contextlib.suppress(FileNotFoundError):
                self.path_for(chat_id).unlink()

    def _changed_on_disk(self, chat_id: str) -> bool:
        """True when the file holds what this store never read nor wrote (a file it does not know counts)."""
        path = self.path_for(chat_id)
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            return False  # a new chat, or one deleted elsewhere: writing loses nothing
        known = self._known.get(chat_id)
        if known is None:
            return True
        if known.same_identity(status):
            return False
        try:
            data, status = read_regular_file_and_status(path, MAX_CHAT_FILE_BYTES)
        except (OSError, ChatFileError):
            return True  # unreadable now: keep it and write ours beside it
        if digest(data) != known.digest:
            return True
        self._known[chat_id] = DiskVersion.of(data, status)  # the same bytes, rewritten or touched
        return False

    def rename(self, chat_id: str, title: str) -> ChatRecord:
        record = self.load(chat_id)
        record.title = clean_title(title)
        record.title_is_custom = True
        record.updated_at = utc_now()
        self.save(record)
        return record

    def quarantine(self, path: Path, reason: str) -> str:
        """Move an unreadable chat file into corrupt/ so it is kept for the user but never read again."""
        target_folder = self.folder / CORRUPT_FOLDER
        target = target_folder / f"{path.stem}-{datetime.now():%Y%m%d-%H%M%S}{path.suffix}"
        try:
            ensure_private_dir(target_folder)
            os.replace(path, target)
            notice = (
                f"The chat file {path.name} could not be read ({reason}). It was moved aside to {target}; "
                f"the other chats are unaffected."
            )
        except OSError as error:
            notice = (
                f"The chat file {path.name} could not be read ({reason}) and could not be moved aside "
                f"({error.strerror}); it is skipped."
            )
        self.notices.append(notice)
        return notice

    def _remove_stale_temp_files(self) -> None:
        now = time.time()
        for path in self.folder.iterdir():
            if is_temp_file(path):
                try:
                    if now - path.stat().st_mtime > STALE_TEMP_AGE_S:
                        path.unlink()
                except OSError:
                    pass

    # -- import and export ----------------------------------------------------------------------

    def export_chat(self, record: ChatRecord, destination: Path) -> None:
        """The chat exactly as stored: what the user saw and the traces, nothing about this machine."""
        atomic_write_bytes(Path(destination), encode_document(record.to_document(), indent=1))

    def import_chat(self, source: Path) -> ChatRecord:
        """Read an exported chat, give it a fresh id (it may be imported twice) and save it here."""
        source = Path(source)
        try:
            # The user picked this file, so a link to it is fine; what it leads to must still be a regular file. The
            # same reader reads --history, Replay and Load lab results (core/bounded_read.py).
            data = read_regular_file(source, MAX_CHAT_FILE_BYTES, follow_links=True)
        except ChatFileError as error:
            raise ChatFileError(f"could not import {source.name}: {error}") from None
        except OSError as error:
            raise ChatFileError(f"could not read {source.name}: {error.strerror}") from None
        try:
            record = decode_document(data)
        except ChatFileError as error:
            raise ChatFileError(f"{source.name} is not a chat this app can import: {error}") from None
        record.chat_id = new_chat_id()
        record.reply_pending = False
        record.updated_at = utc_now()
        self.save(record)
        return record
