"""`normbench` and `python -m normbench`: the Hydra application (normbench/app.py).

Shell completion and ``--help`` only read the configs, so they are answered here without the
training code: no torch import, so a TAB answers in a fraction of a second.
"""

import sys

CONFIG_ONLY = ("-sc", "--shell-completion", "-h", "--help", "--hydra-help")


def main() -> None:
    if any(arg in CONFIG_ONLY or arg.startswith("--shell-completion=") for arg in sys.argv[1:]):
        _configs_only()
    else:
        from normbench.app import main as run

        run()


def _configs_only() -> None:
    import hydra

    from normbench.config import ConfigError, config_dir, register, sweep_dirs

    try:
        sweep_dirs()
    except ConfigError as err:
        print(f"normbench: error: {err}", file=sys.stderr)
        sys.exit(2)
    register()
    hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(_never_called)()


def _never_called(cfg) -> None:  # pragma: no cover - Hydra answers the flag above and returns
    raise RuntimeError("normbench: a configs-only call reached the task function")


if __name__ == "__main__":
    main()
