"""dist_async (run with -n 2 -s 1): each push is applied on arrival, without waiting for the
other workers' pushes of the round."""
import time

import numpy as np

import nanomx as mx

kv = mx.kv.create('dist_async')
rank = kv.rank
shape = (5, 5)
kv.init('a', mx.nd.ones(shape))
kv.set_optimizer(mx.optimizer.create('sgd', learning_rate=0.01))
kv.barrier()
if rank == 1:
    time.sleep(1.5)  # rank 0's pushes must not wait for this one's
start = time.time()
for _ in range(5):
    kv.push('a', mx.nd.ones(shape) * (rank + 1))
out = mx.nd.zeros(shape)
kv.pull('a', out=out)
value = out.asnumpy()
elapsed = time.time() - start
if rank == 0:
    assert elapsed < 1.2, 'a dist_async push waited for the other worker (%.2f s)' % elapsed
    # only rank 0's pushes were applied so far
    assert np.allclose(value, 1 - 0.01 * 5 * 1), value
kv.barrier()
kv.pull('a', out=out)
assert np.allclose(out.asnumpy(), 1 - 0.01 * 5 * (1 + 2)), out.asnumpy()
print('rank %d: dist_async checks passed (%.3f s)' % (rank, elapsed))
