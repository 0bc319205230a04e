"""The engine interface the window talks to: plain-data requests in, timed events out; in-process or in its own process."""
