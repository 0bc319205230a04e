"""The Traffic tab: the proxy started from the window, its requests listed, drawn and metered."""
