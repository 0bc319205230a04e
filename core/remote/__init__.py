"""Remote engines: the same meter over the wire, on OpenAI-compatible servers (vLLM, llama.cpp, LM Studio) and Ollama."""
