"""The error a bad config value raises, below everything that checks one (the schema, the norms)."""


class ConfigError(ValueError):
    """A config value out of range; the message is one line naming the key."""
