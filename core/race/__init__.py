"""The race: one prompt, two configurations (A and B), run each alone or both at once, with a verdict in words."""
