"""`latencylab doctor`: this machine checked before a user blames the model, each check with its figure."""
