"""Timing shared by the bench/compare_*.py scripts (imported from the scripts' own folder)."""
import resource
import time


def best_of(fn, repeats, clock=time.perf_counter, warm_up=False):
    """The least `clock` time of `repeats` runs of fn(), after one unmeasured run with warm_up:
    other load on a shared machine only ever adds time, so the least is the least noisy."""
    if warm_up:
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def cpu_seconds():
    """User + system CPU time of every thread of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
