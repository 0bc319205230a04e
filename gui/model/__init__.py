"""Loading a model from the window: the loader worker."""
