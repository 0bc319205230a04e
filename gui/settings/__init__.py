"""The window's settings: the panel, persistence in QSettings, and checks of saved values."""
