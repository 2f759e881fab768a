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

        run(from_process_start=True)


def _configs_only() -> None:
    import os

    import hydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from normbench.config import config_dir, register, sweep_dirs

    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises; one line below instead of its report
    try:
        sweep_dirs()
        register()
        hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(_never_called)()
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        print(f"normbench: error: {' '.join(str(err).split('Config search path')[0].split())}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:  # `normbench --help | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)


def _never_called(cfg) -> None:  # pragma: no cover - Hydra answers the flag above and returns
    raise RuntimeError("normbench: a configs-only call reached the task function")


if __name__ == "__main__":
    main()
