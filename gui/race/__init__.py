"""The race window: two configurations answer one prompt side by side, played back on one clock, with a verdict."""
