"""A leaner decode loop for Llama-family models than transformers' generate(), with the same results."""
