"""Timing a reply: token events, the trace, vLLM-style metrics, the running median and export."""
