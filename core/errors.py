"""Error types the engine raises, each carrying a message fit to show a user."""


class LatencyLabError(Exception):
    """Base class: every subclass's message is written for the person using the app."""


class ModelLoadError(LatencyLabError):
    """A model could not be loaded; the message says what was tried and why it failed."""


class InvalidSettingsError(LatencyLabError, ValueError):
    """A generation or load setting is out of range or unknown."""


class MessageTooLongError(LatencyLabError):
    """A message longer than any model's context window could hold, refused before it is tokenised or sent."""

    def __init__(self, characters: int, limit: int, at_least: bool = False):
        self.characters = characters
        self.limit = limit
        size = f"more than {characters:,}" if at_least else f"{characters:,}"
        super().__init__(
            f"This message is {size} characters, more than the {limit:,} a message may hold (no model's context "
            "window holds more); it was not sent."
        )


class PromptTooLongError(LatencyLabError):
    """A prompt does not fit into the model's context window once the reply is budgeted (core/chats/context_fit.py)."""

    def __init__(self, prompt_tokens: int, limit: int):
        self.prompt_tokens = prompt_tokens
        self.limit = limit
        super().__init__(
            f"This prompt needs {prompt_tokens:,} prompt tokens, but the model's context window leaves room for only "
            f"{limit:,} once the reply is budgeted. Shorten it or lower max new tokens."
        )
