"""Latency Lab's own CPU kernels, in C: quantised matrix products over a GGUF's blocks and a decoder pass."""
