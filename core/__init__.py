"""Qt-free engine: model loading, timed generation, chat history and latency metrics."""
