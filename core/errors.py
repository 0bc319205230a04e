"""Error types the engine raises, each carrying a message fit to show a user."""


class LatencyLabError(Exception):
    """Base class: every subclass's message is written for the person using the app."""


class ModelLoadError(LatencyLabError):
    """A model could not be loaded; the message says what was tried and why it failed."""


class InvalidSettingsError(LatencyLabError, ValueError):
    """A generation or load setting is out of range or unknown."""


class PromptTooLongError(LatencyLabError):
    """The newest message alone does not fit into the model's context window."""

    def __init__(self, prompt_tokens: int, limit: int):
        self.prompt_tokens = prompt_tokens
        self.limit = limit
        super().__init__(
            f"This message needs {prompt_tokens:,} prompt tokens, but the model's context window "
            f"leaves room for only {limit:,} once the reply is budgeted. Shorten it or lower max new tokens."
        )
