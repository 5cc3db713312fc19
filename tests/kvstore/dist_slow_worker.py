"""A slow worker is not a fault (run with -n 2 -s 1 and NANOMX_KVSTORE_TIMEOUT_MS=1500): in
dist_sync, rank 0's push waits for rank 1's push of the round, here 4 s later, longer than the
timeout; the server answers the pings meanwhile, so nothing fails."""
import time

import numpy as np

import nanomx as mx

kv = mx.kv.create('dist_sync')
kv.init(0, mx.nd.zeros((10,)))
if kv.rank == 1:
    time.sleep(4)
start = time.time()
kv.push(0, mx.nd.ones((10,)) * (kv.rank + 1))
out = mx.nd.zeros((10,))
kv.pull(0, out=out)
assert np.array_equal(out.asnumpy(), np.full((10,), 3.0)), out.asnumpy()
waited = time.time() - start
if kv.rank == 0:
    assert waited > 2, 'rank 0 did not wait for rank 1 (%.1f s)' % waited
print('rank %d: waited %.1f s for the round without a timeout' % (kv.rank, waited))
