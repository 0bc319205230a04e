"""Chats as data and on disk: the session, the saved record, the store, the background saver, atomic files."""
