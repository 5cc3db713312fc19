"""A server dies (NANOMX_TEST_FAULT=kill: SIGKILL) or hangs (=stop: SIGSTOP), or worker rank 1
dies (=kill_worker), while the workers push and pull: the job must end within the timeout with
an error naming the rank, and the workers' traces stay valid JSON (run_fault.py runs this under
the launcher and checks it)."""
import os
import signal
import threading
import time

FAULT = os.environ.get('NANOMX_TEST_FAULT')
if os.environ.get('DMLC_ROLE') == 'server' and FAULT in ('kill', 'stop'):
    # The server role never runs the script body: arm the kill before `import nanomx` serves.
    fault = signal.SIGSTOP if FAULT == 'stop' else signal.SIGKILL
    threading.Timer(4.0, lambda: os.kill(os.getpid(), fault)).start()

import nanomx as mx  # noqa: E402

kv = mx.kv.create('dist_sync')
if FAULT == 'kill_worker' and kv.rank == 1:
    threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
mx.profiler.set_config(filename='rank%d_fault_worker.json' % kv.rank, profile_all=True,
                       continuous_dump=True, dump_period=0.2)
mx.profiler.set_state('run')
kv.init(0, mx.nd.ones((100,)))
out = mx.nd.zeros((100,))
deadline = time.time() + 30
while time.time() < deadline:
    kv.push(0, mx.nd.ones((100,)))
    kv.pull(0, out=out)
    out.asnumpy()
    time.sleep(0.01)
raise SystemExit('rank %d: the server died but push/pull kept working for 30 s' % kv.rank)
