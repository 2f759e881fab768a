"""The runners' children (normbench/studies/children.py): nothing of a stopped round outlives its runner."""


def test_a_stopped_round_waits_for_the_workers_its_child_left(tmp_path):
    """SIGTERM to the runner: its child (the sweep's launcher) stops at once, but a worker it started
    takes a moment to end its run; the runner returns only after the worker has ended (issue 50)."""
    import signal
    import sys
    import time

    from normbench.studies import children

    ended = tmp_path / "worker-ended"
    worker = ("import signal, sys, time\n"
              f"def stop(*a):\n    time.sleep(1.0); open({str(ended)!r}, 'w').close(); sys.exit(0)\n"
              "signal.signal(signal.SIGTERM, stop)\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    launcher = ("import signal, subprocess, sys, time\n"
                f"w = subprocess.Popen([sys.executable, '-c', {worker!r}], stdout=subprocess.PIPE, text=True)\n"
                "w.stdout.readline()\n"
                "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
                "print('started', flush=True)\n"
                "time.sleep(60)\n")
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    workers = children.descendants(child.pid)
    assert len(workers) == 1
    children.stop_child(child, signal.SIGTERM)
    assert child.poll() is not None and ended.exists()
    assert not children._alive(workers)
