"""Wall-clock bounds that hold on a loaded machine.

A test that promises "within N seconds" (a follower's latency, a time-out that must not be
waited out) measures wall time, which a busy machine stretches: at load 12 on 2 cores a process
gets about a sixth of a core. ``Slowdown`` measures that stretch while the test runs (a CPU-bound
loop's wall time over its CPU time, before and after: 1 on an idle machine, about 6 at load 12)
and scales the bound by the larger: on an idle machine the bound is the promise itself, on a
loaded one it grows with the load, never with the product's own waiting (which is what the
bounds are there to catch). Figures themselves are measured by the benchmarks (tests/bench)."""
import os
import resource
import time

SAMPLE_CPU_SECONDS = 0.05


def slowdown(cpu_seconds=SAMPLE_CPU_SECONDS):
    """Wall seconds per CPU second of a busy loop in this thread now (at least 1)."""
    wall, cpu = time.monotonic(), time.thread_time()
    while time.thread_time() - cpu < cpu_seconds:
        pass
    return max(1.0, (time.monotonic() - wall) / (time.thread_time() - cpu))


class Slowdown:
    """``load = Slowdown()`` (or ``with Slowdown() as load:``) ... ``assert took < load.bound(2.0)``:
    the bound scaled by the largest slowdown measured at the start and when ``bound`` is asked."""

    def __init__(self):
        self.factor = slowdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def bound(self, seconds):
        self.factor = max(self.factor, slowdown())
        return seconds * self.factor


def process_cpu_seconds(pid):
    """CPU seconds (user + system, its waited children's included) a live process used so far:
    what a bound on work done, rather than on time passed, compares; a loaded machine leaves it
    as it is."""
    with open('/proc/%d/stat' % pid) as handle:
        fields = handle.read().rsplit(')', 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / float(os.sysconf('SC_CLK_TCK'))


def children_cpu_seconds():
    """CPU seconds (user + system) of this process's children waited for so far, theirs included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
