"""Runs dist_fault.py under the launcher (2 workers, 1 server; a server dies or hangs, or a
worker dies) and checks that the job fails fast, names the rank, and leaves valid traces of the
workers (the dead worker's too: the profiler writes crash-safely).

kill, kill_worker: Open MPI notices the death and ends the job, naming the MPI rank. stop:
nothing dies, so only the kvstore's timeout (NANOMX_KVSTORE_TIMEOUT, 5 s here) can end the
job; its error names the server."""
import glob
import json
import os
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
fault = sys.argv[1] if len(sys.argv) > 1 else 'kill'
for old in glob.glob('rank*_fault_worker.json'):
    os.remove(old)
env = dict(os.environ, NANOMX_KVSTORE_TIMEOUT='5', NANOMX_TEST_FAULT=fault)
start = time.time()
job = subprocess.run([sys.executable, '-m', 'nanomx.tools.launch', '-n', '2', '-s', '1',
                      sys.executable, os.path.join(here, 'dist_fault.py')],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                     timeout=60)
elapsed = time.time() - start
print(job.stdout[-3000:])
assert job.returncode != 0, 'the job succeeded although a server died'
# the kill comes 4 s in; the timeout is 5 s
assert elapsed < 30, 'the job took %.1f s to fail' % elapsed
# MPI rank 2 is the server (ranks 0..1 are the workers)
if fault == 'kill':
    assert 'rank 2' in job.stdout, 'the dead rank is not named'
elif fault == 'kill_worker':
    assert 'rank 1' in job.stdout, 'the dead rank is not named'
else:
    assert 'no reply from server rank 0 (MPI rank 2)' in job.stdout, 'no timeout error'
    assert 'no answer to pings' in job.stdout, 'no timeout error'
files = sorted(glob.glob('rank*_fault_worker.json'))
assert files, 'no worker trace'
for path in files:
    with open(path) as f:
        json.load(f)
print('fault: job ended in %.1f s (rc %d); traces valid: %s' % (elapsed, job.returncode, files))
