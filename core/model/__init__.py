"""Which model to load and loading it: sources, the loader with its preflight, the GGUF cache, offline switches."""
