"""A pass-through HTTP proxy that times every LLM request other programs send to a server (no Qt)."""
