"""The timing primitive on a fake clock: what is counted, what is not, and in which order."""

import pytest

from normbench.bench.timing import Timing, WallClock, measure, paired_difference, paired_ratio, time_callable


class FakeTime:
    """A clock that moves only when a candidate runs: every call takes exactly ``per_call`` seconds."""

    def __init__(self, per_call=1e-3):
        self.now, self.per_call, self.calls = 0.0, per_call, []

    def clock(self):
        return self.now

    def candidate(self, name="fn"):
        def run():
            self.calls.append(name)
            self.now += self.per_call
        return run


def test_warmup_and_repeats_are_respected():
    fake = FakeTime()
    timing = time_callable(fake.candidate(), warmup=3, repeats=4, loop=2, timer=WallClock(fake.clock))
    assert len(fake.calls) == 3 + 4 * 2  # warm-up calls are made but not timed
    assert len(timing.samples) == 4 and timing.loop == 2
    assert timing.median == pytest.approx(1e-3) and timing.iqr == pytest.approx(0, abs=1e-12)


def test_loop_is_sized_to_the_minimum_loop_time():
    fake = FakeTime(per_call=1e-3)
    timing = time_callable(fake.candidate(), warmup=1, repeats=3, min_loop_s=5e-3, timer=WallClock(fake.clock))
    assert 5 <= timing.loop <= 8
    sizing_calls = len(fake.calls) - 1 - 3 * timing.loop
    assert sizing_calls >= 1  # sizing loops ran, and were not recorded as samples
    assert len(timing.samples) == 3 and timing.median == pytest.approx(1e-3)


def test_candidates_are_interleaved_with_changing_neighbours():
    fake = FakeTime()
    names = ["a", "b", "c", "d"]
    measure({n: fake.candidate(n) for n in names}, warmup=0, repeats=8, loop=1, timer=WallClock(fake.clock))
    rounds = [fake.calls[i : i + 4] for i in range(0, 32, 4)]
    assert all(sorted(r) == names for r in rounds)  # every round times every candidate once
    # no candidate always runs right after the same one (rotation would keep every predecessor)
    predecessors = {n: {r[r.index(n) - 1] for r in rounds if r.index(n) > 0} for n in names}
    assert all(len(p) > 1 for p in predecessors.values()), predecessors


def test_real_callable_has_positive_median():
    timing = time_callable(lambda: sum(range(200)), warmup=1, repeats=3, min_loop_s=2e-4)
    assert timing.median > 0 and timing.loop >= 1
    row = timing.to_dict()
    assert row["median_ms"] > 0 and row["q1_ms"] <= row["median_ms"] <= row["q3_ms"] and row["repeats"] == 3


def test_paired_ratio_and_difference_are_per_round():
    a, b = Timing((2.0, 4.0, 6.0), 1), Timing((1.0, 2.0, 3.0), 1)
    ratio = paired_ratio(a, b)
    assert (ratio.median, ratio.q1, ratio.q3) == (2.0, 2.0, 2.0)
    assert paired_difference(a, b) == 2.0


def test_measure_rejects_no_repeats():
    with pytest.raises(ValueError):
        measure({"a": lambda: None}, repeats=0)
