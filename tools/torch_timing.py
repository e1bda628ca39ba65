"""The timing loop shared by the PyTorch baselines that bench/bench_kernels runs."""
import statistics
import time


def median_time_us(fn, min_seconds, min_reps):
    """Median wall time of fn() in microseconds, over repeats until min_seconds have passed
    (and at least min_reps ran). Three warm-up calls first: oneDNN creates and caches its
    primitive for a new shape on the first call, and the first timed case otherwise varied
    from 4.5 to 19 ms between runs."""
    for _ in range(3):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)
