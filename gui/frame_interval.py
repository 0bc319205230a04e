"""The window's frame interval: live text, plots and cards are applied at most this often, whatever the token rate."""

# About 30 frames a second: smooth to the eye. Each frame costs the window about the same CPU however few tokens
# it shows, since on a busy machine most of that cost is fetching the frame's code and data into the caches again
# (benchmarks/frame_footprint.py); so the window's CPU while streaming scales with this rate.
FRAME_INTERVAL_MS = 33
