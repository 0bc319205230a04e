"""Generating one reply: the reply object, streamer, detokenizer, stopping, context fit and the decode loops."""
