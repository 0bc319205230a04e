"""The model in the window: the controller that starts the engine, loads and restarts it, and the server dialog."""
