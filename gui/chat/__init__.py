"""The chat itself: the reply state machine, the live reply applied once per frame, transcript, message box, pastes."""
