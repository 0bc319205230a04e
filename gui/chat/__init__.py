"""The chat itself: transcript, message box, large pastes and the worker that relays a reply to the window."""
