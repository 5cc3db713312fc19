"""dist_sync between the launched workers and servers (run with -n 2 -s 1 and -n 2 -s 2, and
MXNET_KVSTORE_BIGARRAY_BOUND=1000 so that the big key is sharded across the servers): values,
keys, the servers' optimizer and the errors (docs/kvstore.md)."""
import numpy as np

import nanomx as mx


def expect_error(fn, *needles):
    try:
        fn()
    except (mx.MXNetError, AssertionError, TypeError) as error:
        for needle in needles:
            assert needle in str(error), (needle, str(error))
        return
    raise AssertionError('no error; expected one saying %r' % (needles,))


kv = mx.kv.create('dist_sync')
assert kv.type == 'dist_sync'
W = kv.num_workers
assert W == 2 and 0 <= kv.rank < W, (kv.rank, W)
rank = kv.rank
total = sum(r + 1 for r in range(W))

# int and str keys, a list of keys, several values for one key summed first
shape = (3, 4)
kv.init([3, 5], [mx.nd.ones(shape), mx.nd.zeros(shape)])
kv.init('w', mx.nd.ones((2, 2)) * 7)
out = mx.nd.zeros((2, 2))
kv.pull('w', out=out)
assert np.array_equal(out.asnumpy(), np.full((2, 2), 7, np.float32)), out.asnumpy()
for round_ in range(3):
    kv.push([3, 5], [mx.nd.ones(shape) * (rank + 1), [mx.nd.ones(shape), mx.nd.ones(shape) * 2]])
    a, b = mx.nd.zeros(shape), mx.nd.zeros(shape)
    kv.pull([3, 5], out=[a, b])
    # no updater: the stored value is the sum of the round's pushes
    assert np.array_equal(a.asnumpy(), np.full(shape, total, np.float32)), a.asnumpy()
    assert np.array_equal(b.asnumpy(), np.full(shape, 3 * W, np.float32)), b.asnumpy()

# a big key (above the bound) split across the servers: every element in its place
big = (40, 50)
base = np.arange(40 * 50, dtype=np.float32).reshape(big)
kv.init(9, mx.nd.array(base))
kv.push(9, mx.nd.array(base * (rank + 1)))
got = mx.nd.zeros(big)
kv.pull(9, out=got)
assert np.array_equal(got.asnumpy(), base * total), got.asnumpy()[:2, :4]

# the optimizer runs on the servers
kv.set_optimizer(mx.optimizer.create('sgd', learning_rate=0.1))
kv.push(9, mx.nd.ones(big) * (rank + 1))
kv.pull(9, out=got)
expected = base * total - np.float32(0.1) * np.float32(total)
assert np.array_equal(got.asnumpy(), expected), (got.asnumpy()[0, :4], expected[0, :4])
kv.push('w', mx.nd.ones((2, 2)))
kv.pull('w', out=out)
assert np.allclose(out.asnumpy(), 7 - 0.1 * W), out.asnumpy()

# errors name the key
expect_error(lambda: kv.push(11, mx.nd.ones(shape)), 'key 11', 'not been inited')
expect_error(lambda: kv.pull(11, out=mx.nd.ones(shape)), 'key 11', 'not been inited')
expect_error(lambda: kv.push(3, mx.nd.ones((2, 2))), 'key 3', 'shape')
expect_error(lambda: kv.pull('w', out=mx.nd.ones((2, 2), dtype='float64')), "key 'w'", 'dtype')
expect_error(lambda: kv.init(3, mx.nd.ones(shape)), 'duplicate init of key 3')
expect_error(lambda: kv.pull('nope', out=out), 'nope')
expect_error(lambda: kv.row_sparse_pull(3, out=a, row_ids=mx.nd.zeros((1,))), 'row_sparse_pull')
expect_error(lambda: kv.set_gradient_compression({'type': '2bit'}), 'compression')
expect_error(lambda: kv.save_optimizer_states('x.states'), 'distributed')
# an unknown server command fails on the server and comes back here
expect_error(lambda: kv._send_command_to_servers(4, ''), 'compression')
# malformed server profiler commands (MXNet's kSetProfilerParams format) come back as errors
expect_error(lambda: kv._send_command_to_servers(5, 'filename0'), 'Improper profiler config')
expect_error(lambda: kv._send_command_to_servers(5, 'filename:0'),
             'ProfilerConfig value is empty for parameter filename')
expect_error(lambda: kv._send_command_to_servers(5, '19'), 'unknown sub-command')
expect_error(lambda: kv._send_command_to_servers(5, '71'), 'state expects 0 or 1')
kv.barrier()
print('rank %d: dist_sync checks passed' % rank)
