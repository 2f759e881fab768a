"""What each setting of Hydra's joblib launcher (``hydra/launcher=local`` or ``joblib``) does in a normbench
sweep, and the values that do it: one table (JOBLIB_SETTINGS), checked before any job runs
(hydra_files.CheckHydraFiles.on_multirun_start).

Hydra's launcher hands its settings to ``joblib.Parallel`` (hydra_joblib_launcher/_core.py), but not all of
them act. It sets ``backend`` to loky itself, whatever the config says (threads would share Hydra's global
state), so ``prefer`` is a hint nobody reads and ``require: sharedmem`` fails once the sweep has begun; and
joblib's memmapping settings (``temp_folder``, ``max_nbytes``, ``mmap_mode``) act on numpy arrays passed to
a job, where a normbench job is passed its config alone. A setting the launcher would drop, or that joblib
would refuse (or, as ``pre_dispatch: 0``, obey by running no job) only once the sweep has started, is
refused in one line naming the key and what it takes (hostile h25 xe004: ``backend=nonsense`` ran the sweep
on loky and exited 0). A key the launcher does not have (``+hydra.launcher.foo=1``, which joblib passed on
and ignored) is refused too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

_NOTHING_TO_MEMMAP = ("(joblib memmaps only the numpy arrays passed to a job, and a normbench job is passed its "
                      "config alone: no other value would change anything)")


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value) -> int | None:
    """``value`` as the whole number Hydra's launcher makes of it (its schema keeps ``batch_size`` and
    ``pre_dispatch`` as text, ``"1"``), or None."""
    if _whole(value):
        return value
    return int(value) if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value) else None


def _seconds(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0)


def _pre_dispatch(value) -> bool:
    """joblib reads ``all``, a count, or arithmetic in ``n_jobs`` (its own evaluator, joblib._utils.eval_expr);
    a count below 1 dispatches no job at all: the sweep would end at once with nothing run."""
    if value == "all":
        return True
    if _count(value) is not None:
        return _count(value) >= 1
    if not isinstance(value, str):
        return False
    try:
        from joblib._utils import eval_expr
    except ImportError:  # another joblib: it says itself what it cannot read
        return True
    try:
        return int(eval_expr(value.replace("n_jobs", "1"))) >= 1
    except (ValueError, TypeError, ZeroDivisionError, SyntaxError, OverflowError):
        return False


# key: (whether a value is one the launcher honours, what the key takes). The keys are those of Hydra's
# JobLibLauncherConf (a test holds them equal), _target_ aside.
JOBLIB_SETTINGS: dict[str, tuple[Callable[[object], bool], str]] = {
    "n_jobs": (lambda v: _whole(v) and v != 0,
               "a whole number of worker processes other than 0 (negative: joblib counts back from the cores, "
               "-1 every core)"),
    "backend": (lambda v: v in (None, "loky"),
                "null or loky (Hydra's joblib launcher always runs the jobs in loky worker processes)"),
    "prefer": (lambda v: v == "processes",
               "processes (the jobs run in loky worker processes whatever it says)"),
    "require": (lambda v: v is None, "null (sharedmem needs threads; the jobs run in loky worker processes)"),
    "verbose": (lambda v: _whole(v) and v >= 0, "a whole number >= 0 (above 0, joblib's progress lines on stderr)"),
    "timeout": (_seconds, "a number of seconds > 0 (or null: no limit)"),
    "pre_dispatch": (_pre_dispatch, "all, a whole number >= 1 or an expression in n_jobs such as 2*n_jobs"),
    "batch_size": (lambda v: v == "auto" or (_count(v) or 0) >= 1,
                   "auto or a whole number >= 1 (the jobs a worker is handed at once)"),
    "temp_folder": (lambda v: v is None, f"null {_NOTHING_TO_MEMMAP}"),
    "max_nbytes": (lambda v: v is None, f"null {_NOTHING_TO_MEMMAP}"),
    "mmap_mode": (lambda v: v == "r", f"r, its default {_NOTHING_TO_MEMMAP}"),
}


def joblib_setting_problem(launcher) -> str | None:
    """Why ``launcher`` (the composed ``hydra.launcher``) holds a setting the joblib launcher would not honour as
    written, or None; None for any other launcher."""
    if not OmegaConf.is_dict(launcher) or "JoblibLauncher" not in str(launcher.get("_target_", "")):
        return None
    try:
        settings = OmegaConf.to_container(launcher, resolve=True)
    except OmegaConfBaseException as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return f"hydra.launcher does not resolve: {first[:200]}"
    for key, value in settings.items():
        if key == "_target_":
            continue
        if key not in JOBLIB_SETTINGS:
            return (f"hydra.launcher.{str(key)[:80]} is not a setting of the joblib launcher (hydra/launcher=local), "
                    f"which would pass it on unread; its settings: {', '.join(JOBLIB_SETTINGS)}")
        honoured, takes = JOBLIB_SETTINGS[key]
        if not honoured(value):
            return f"hydra.launcher.{key} must be {takes}, got {str(value)[:40]}"
    return None
