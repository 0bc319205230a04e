"""GGUF blocks and their decoding, and torch's weight-only quantised layers: int4 and int8, bfloat16, Q8 heads."""
