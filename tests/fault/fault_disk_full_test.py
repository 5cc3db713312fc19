"""A full disk during continuous dump (docs/profiler.md#crash-safety).

1. File size limit (RLIMIT_FSIZE, any user): the trace cannot grow past 8 MiB. The child keeps
   running, says once on stderr that the dump failed, and the file keeps its last complete
   flush, valid.
2. A real full file system (a 24 MiB tmpfs; needs root to mount, as on CI): the same, then
   space is freed and the child says once that the dump works again, and the file grows again,
   still valid.
The child is `profiler_child heavy` (profile_all, continuous dump every 0.1 s, 4 threads)."""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import fault_util


class StderrLines:
    """Collects a child's stderr lines in the background."""

    def __init__(self, stream):
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in iter(stream.readline, b""):
            self.lines.append(line.decode(errors="replace").rstrip())

    def count(self, text):
        return sum(text in line for line in self.lines)

    def wait_for(self, text, seconds, at_least=1):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.count(text) >= at_least:
                return True
            time.sleep(0.02)
        return False


FAILED = "continuous dump failed"
RECOVERED = "continuous dump works again"


def check_full(path, errors, label):
    assert errors.wait_for(FAILED, 20), f"{label}: no failure reported; stderr: {errors.lines}"
    assert os.path.exists(path), f"{label}: no trace file before the disk filled"
    data = fault_util.load_partial_trace(path)
    size = os.path.getsize(path)
    time.sleep(0.6)  # six periods of failing flushes
    assert errors.count(FAILED) == 1, f"{label}: failure reported {errors.count(FAILED)} times"
    assert os.path.getsize(path) == size, f"{label}: the file changed while the disk was full"
    fault_util.load_partial_trace(path)
    return len(data["traceEvents"]), size


def file_size_limit():
    work = tempfile.mkdtemp(prefix="fault_fsize_")
    path = os.path.join(work, "trace.json")
    limit = 8 << 20

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    child = fault_util.start_heavy(path, 4, stderr=subprocess.PIPE, preexec_fn=limit_file_size)
    errors = StderrLines(child.stderr)
    try:
        events, size = check_full(path, errors, "file size limit")
        assert child.poll() is None, "the child died"
        print(f"file size limit {limit >> 20} MiB: failure reported once, file kept valid "
              f"({events} events, {size / 1e6:.1f} MB), process kept running")
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(work, ignore_errors=True)


def full_tmpfs():
    if os.geteuid() != 0:
        print("full tmpfs: not run (mounting a tmpfs needs root; the file size limit case ran)")
        return
    mount = tempfile.mkdtemp(prefix="fault_tmpfs_")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mount], check=True)
    try:
        filler = os.path.join(mount, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * (8 << 20))
        path = os.path.join(mount, "trace.json")
        child = fault_util.start_heavy(path, 4, stderr=subprocess.PIPE)
        errors = StderrLines(child.stderr)
        try:
            events, size = check_full(path, errors, "full tmpfs")
            os.remove(filler)  # 8 MiB free again
            assert errors.wait_for(RECOVERED, 20), f"no recovery reported; stderr: {errors.lines}"
            deadline = time.monotonic() + 10
            while os.path.getsize(path) == size and time.monotonic() < deadline:
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
            child.wait()
            data = fault_util.load_partial_trace(path)
            assert len(data["traceEvents"]) > events, "the file did not grow after recovery"
            # It fills the disk again soon: reported again as a new failure, after the recovery.
            print(f"full tmpfs (24 MiB): failure reported once, file kept valid ({events} events), "
                  f"recovery reported once space was freed, file grew to "
                  f"{len(data['traceEvents'])} events, valid after SIGKILL")
        finally:
            child.kill()
            child.wait()
    finally:
        subprocess.run(["umount", mount], check=False)
        os.rmdir(mount)


def main():
    file_size_limit()
    full_tmpfs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
