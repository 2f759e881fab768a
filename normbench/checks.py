"""Range checks of config values, and the one error they raise.

The lowest floor: the schema's groups and the tasks' configs (normbench/tasks/) both check their
values with these, so a bad setting anywhere is a ``ConfigError``: one line naming the key, which
the app prints and exits with status 2.
"""


class ConfigError(ValueError):
    """A config value out of range; the message is one line naming the key."""


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def one_of(key: str, value: str, valid: tuple[str, ...]) -> None:
    require(value in valid, f"{key}={value!r} is not valid; valid: {', '.join(valid)}")


def require_at_least(key: str, value: int, minimum: int) -> None:
    """Reject a task config value below `minimum`, naming the user's Hydra key."""
    require(value >= minimum, f"task.{key} must be >= {minimum}, got {value}")


def require_name(name: str, expected: str) -> None:
    """Reject a task config whose `name` is not its own task: load_task dispatches on the name."""
    require(name == expected, f"task.name must be {expected!r} for this config, got {name!r}")


def require_split_sizes(config) -> None:
    """n_train, n_val and n_test of a task that draws its examples: at least one each."""
    for key in ("n_train", "n_val", "n_test"):
        require_at_least(key, getattr(config, key), 1)
