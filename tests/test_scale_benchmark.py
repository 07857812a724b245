"""benchmarks/scale.py's own safety: no in-memory comparison beyond --compare-rows, and a hard memory cap."""

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import scale  # noqa: E402


def test_the_in_memory_comparison_is_made_only_for_the_first_size_on_one_process_within_the_bound():
    # the 15 GiB after the first 50 M run's stream was this comparison: every row as one frame, then in memory
    assert scale.compares(1_000_000, 1_000_000, 0, 5_000_000)
    assert not scale.compares(50_000_000, 50_000_000, 0, 5_000_000)
    assert not scale.compares(5_000_000, 1_000_000, 0, 5_000_000)
    assert not scale.compares(1_000_000, 1_000_000, 2, 5_000_000)


def test_a_measurement_past_its_memory_cap_is_stopped_with_its_stacks(tmp_path):
    here, log = str(Path(scale.__file__).parent), str(tmp_path / "watch.log")
    code = (f"import sys, time; sys.path.insert(0, {here!r}); import scale; scale.watch(1.0, {log!r})\n"
            "held = bytearray(64 << 20)\nfor _ in range(100):\n    time.sleep(0.1)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    text = (tmp_path / "watch.log").read_text()
    assert done.returncode == 75, done.stderr
    assert "passed the cap of 1 MiB: stopped" in text and "Thread" in text and "rss_mib=" in text


def test_a_process_cpu_seconds_read_from_schedstat_equal_its_own_clock():
    # the column that says how long a process waited for a core is read beside its CPU: the CPU must be its own
    import time

    cpu0, wait0 = scale.scheduled()
    clock0 = time.process_time()
    total = 0
    while time.process_time() - clock0 < 0.4:
        total += sum(range(1000))
    clock = time.process_time() - clock0
    cpu1, wait1 = scale.scheduled()
    assert total > 0
    assert abs((cpu1 - cpu0) - clock) < 0.05 + 0.1 * clock
    assert wait1 >= wait0 >= 0
