"""No test's verdict depends on the machine's speed: every wait for a process or a condition is bounded
by tests/waiting.py's HANG_S (a hang), never by a number of seconds a slow machine can exceed."""

import re
from pathlib import Path

# a literal bound on a wait: subprocess/communicate/wait timeouts, deadlines, alarms, wait_until's bound
LITERAL_WAIT = re.compile(r"(?<![.?\w])timeout=\d|(?:monotonic|time)\(\) \+ \d|\balarm\(\d*[1-9]|wait_until\([^\n]*, \d+(?:\.\d+)?[,)]")
# a line that sets a logger's own time bound (logger.mlflow.timeout=1, a sqlite URI's ?timeout=) or a start
# barrier is a setting under test, not a wait: it says so on the line
NOT_A_WAIT = ("a setting, not a wait bound", "a start barrier, not a wait bound")


def test_every_wait_in_the_tests_is_bounded_by_hang_s_alone():
    tests = Path(__file__).parent
    found = [f"{path.relative_to(tests)}:{number}: {line.strip()}"
             for path in sorted(tests.rglob("*.py")) if path.name != "test_waiting.py"
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if LITERAL_WAIT.search(line) and not any(mark in line for mark in NOT_A_WAIT)]
    assert found == [], "\n".join(found)


def test_the_pattern_finds_what_it_forbids():
    for line in ("proc.communicate(timeout=60)", "deadline = time.monotonic() + 10", "signal.alarm(60)",
                 "assert wait_until(lambda: done(), 5)", "deadline = time.time() + 120"):
        assert LITERAL_WAIT.search(line), line
    for line in ("proc.communicate(timeout=HANG_S)", "signal.alarm(0)", "children.run(cmd, timeout_s=0.5)",
                 "wait_until(both_training, HANG_S, poll_s=0.5)", "'logger.mlflow.timeout=1'", "'sqlite:///db?timeout=5'"):
        assert not LITERAL_WAIT.search(line), line
