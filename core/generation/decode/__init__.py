"""A leaner decode loop than transformers' generate(), with the same results, for the families in families.py."""
