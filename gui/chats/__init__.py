"""Saved chats in the window: the sidebar, the keeper that saves in the background, and redrawing a chat."""
