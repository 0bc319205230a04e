"""The Lab tab: run the chapter's sweeps from the window, watch the plots fill in, read the verdicts."""
