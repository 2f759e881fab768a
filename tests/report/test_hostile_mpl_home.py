"""The report draws with matplotlib, which left to itself writes its font cache and config folder under
$HOME (hostile cases R00, R00b): nothing of it may stay there, nor in the temporary folder after."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.waiting import HANG_S

DRAW = ("import normbench.report.figures, matplotlib, matplotlib.font_manager, os, sys; "
        "print(matplotlib.get_cachedir()); print(os.environ.get('MPLCONFIGDIR'))")


def _draw(home, **env):
    clean = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    done = subprocess.run([sys.executable, "-c", DRAW], env={**clean, "HOME": str(home), **env},
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_matplotlib_writes_nothing_under_home_and_its_folder_goes(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cache, folder = _draw(home)
    assert list(home.iterdir()) == []
    assert cache == folder and not os.path.exists(folder)  # removed at the process's exit


def test_a_folder_the_user_chose_is_kept(tmp_path):
    home, mine = tmp_path / "home", tmp_path / "mine"
    home.mkdir()
    cache, folder = _draw(home, MPLCONFIGDIR=str(mine))
    assert folder == str(mine) and cache == str(mine) and mine.is_dir()
    assert list(home.iterdir()) == []


def test_a_backend_matplotlib_does_not_know_does_not_stop_the_report(tmp_path):
    """Hostile h16 K11: MPLBACKEND=bogus ended `normbench report` in matplotlib's ValueError at import; every
    figure is drawn on an Agg canvas, so the report's matplotlib starts on Agg whatever the environment names."""
    home = tmp_path / "home"
    home.mkdir()
    cache, folder = _draw(home, MPLBACKEND="bogus")
    assert cache == folder


def test_an_unsaved_font_cache_says_nothing(tmp_path):
    """Hostile F04 F06 F18 (H6): under `ulimit -f`, matplotlib's "Could not save font_manager cache" came
    before the command's own line about what it could not write."""
    import resource

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    clean = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    done = subprocess.run([sys.executable, "-c", DRAW], env={**clean, "HOME": str(tmp_path), "MPLCONFIGDIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=HANG_S, preexec_fn=limited)
    assert done.returncode == 0 and done.stderr == "", done.stderr
