"""How long a test waits for a process or a condition: a bound that catches a hang, never a slow machine.

A test's verdict must not depend on the machine's speed: on a shared 2-core machine at load 12 the
suite ran 7x slower, and a 60 s watchdog in a report test fired on a run that was only slow. So every
wait in the tests is "until it happens, or until HANG_S has passed": a wait that ends as soon as its
condition holds costs nothing when it passes, and a hang still fails, after HANG_S.
NORMBENCH_TEST_HANG_S sets it (e.g. lower on a quiet machine, to learn sooner of a hang).
"""

import os

HANG_S = float(os.environ.get("NORMBENCH_TEST_HANG_S", "1800"))
