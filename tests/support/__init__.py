"""Helpers the tests of several features share: GGUF editing, driving the window, the app in its own process."""
