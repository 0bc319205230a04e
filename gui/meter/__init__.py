"""The live latency meter: stat cards, the waterfall, the plots refreshed by one timer, and the prompt-cache map."""
