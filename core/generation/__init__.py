"""Generating one reply: the request and the reply object, streamer, detokenizer, stopping, and the decode loops."""
