"""Weight-only quantised linear layers for fast CPU decode: int4 (from the GGUF's own Q4_1 blocks) and int8."""
