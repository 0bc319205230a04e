"""Qt user interface: the chat window and its live latency meter."""
