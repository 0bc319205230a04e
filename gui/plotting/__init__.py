"""Pieces the meter and the Lab tab share: plot style, growable buffers, path curves, stepped ranges."""
