"""The live latency meter: stat cards and three plots refreshed by one timer."""
