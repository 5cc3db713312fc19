"""MXNet's tests/nightly/test_server_profiling.py scenario (docs/kvstore.md, "Server profiling"),
run by the launcher with -n 3 (3 workers, 3 servers): a 1200x1200 key (sharded across the
servers) pushed and pulled 10 times with SGD on the servers, profile_process='server' and
'worker'. Checks what MXNet's test leaves unchecked: the pulled values, exactly, and what each
rank's trace holds."""
import glob
import json
import os
import subprocess

import numpy as np

import nanomx as mx
from nanomx import profiler

kv = mx.kv.create('dist_sync')
key = '99'
shape = (1200, 1200)


def test_sync_push_pull():
    kv.init(key, mx.nd.ones(shape))
    kv.set_optimizer(mx.optimizer.create('sgd'))
    expected = np.ones(shape, dtype=np.float32)
    total = sum(r + 1 for r in range(kv.num_workers))
    for _ in range(10):
        kv.push(key, mx.nd.ones(shape) * (kv.rank + 1))
        val = mx.nd.zeros(shape)
        kv.pull(key, out=val)
        mx.nd.waitall()
        # What the servers' sgd_update computes: w - lr * (rescale_grad * g), in float32.
        expected = expected - np.float32(0.01) * (np.float32(1.0) * np.float32(total))
        got = val.asnumpy()
        assert np.array_equal(got, expected), (got.ravel()[:4], expected.ravel()[:4])
    # 1 - 10 * 0.01 * (1 + 2 + 3) with 3 workers
    assert abs(float(got[0, 0]) - (1 - 10 * 0.01 * total)) < 1e-5, got[0, 0]


def names_in(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace['traceEvents'] if isinstance(trace, dict) else trace
    return trace, {e.get('name') for e in events}, events


if __name__ == '__main__':
    profiler.set_config(filename='test_profile_server.json', profile_all=True,
                        profile_process='server')
    profiler.set_config(filename='rank' + str(kv.rank) + '_test_profile_worker.json',
                        profile_all=True, profile_process='worker')
    profiler.set_state(state='run', profile_process='server')
    profiler.set_state(state='run', profile_process='worker')
    test_sync_push_pull()
    profiler.set_state(state='stop', profile_process='server')
    profiler.set_state(state='stop', profile_process='worker')
    # MXNet's test reads the files before any process exits, when nothing finished them yet
    # (its check is racy); finishing both dumps first makes it deterministic.
    profiler.dump(finished=True, profile_process='server')
    profiler.dump(finished=True, profile_process='worker')

    # A bad value in a server command comes back as this call's error.
    try:
        profiler.set_config(filename='x.json', profile_all='maybe', profile_process='server')
    except mx.MXNetError as error:
        assert 'profile_all' in str(error), error
    else:
        assert kv.rank != 0, 'a bad server config did not raise on rank 0'
    kv.barrier()

    if kv.rank == 0:
        print(sorted(glob.glob('*')), os.getcwd())
        for r in range(kv.num_workers):
            _, names, events = names_in('rank%d_test_profile_worker.json' % r)
            assert 'KVStoreDistDefaultPush' in names and 'KVStoreDistDefaultStoragePull' in names, \
                sorted(n for n in names if n)[:40]
            trace, names, events = names_in('rank%d_test_profile_server.json' % r)
            assert 'time_zero_unix_ns' in json.dumps(trace.get('otherData', {})), trace.keys()
            # the server's own work: requests, merges, the optimizer's update operator
            for expected in ('KVStoreServer::push', 'KVStoreServer::pull',
                             'KVStoreServerMergeCopy', 'KVStoreServerMergeAdd'):
                assert expected in names, (expected, sorted(n for n in names if n))
            assert any(n and 'sgd_update' in n for n in names), sorted(n for n in names if n)
            received = [e for e in events if e.get('ph') == 'C' and
                        e.get('name') == 'bytes_received']
            sent = [e for e in events if e.get('ph') == 'C' and e.get('name') == 'bytes_sent']
            assert received and sent, 'no byte counters in the server trace'
            part = 1200 * 1200 * 4 // 3
            last = max(int(next(iter(e['args'].values()))) for e in received)
            # 10 rounds of a third of the key from each of 3 workers, at least
            assert last >= 10 * 3 * part, (last, 10 * 3 * part)
        print('server profiling: all files valid')
        # nanomx-trace merge lines the six files up with a row per rank and role
        tool = os.environ.get('NANOMX_TRACE_TOOL')
        if tool:
            files = sorted(glob.glob('rank*_test_profile_*.json'))
            subprocess.run([tool, 'merge'] + files + ['-o', 'merged.json'], check=True)
            with open('merged.json') as f:
                merged = json.load(f)
            events = merged['traceEvents'] if isinstance(merged, dict) else merged
            labels = {e['args']['name'].rsplit('[', 1)[-1].rstrip(']') for e in events
                      if e.get('ph') == 'M' and e.get('name') == 'process_name'}
            want = {'%s%d' % (role, r) for role in ('worker', 'server')
                    for r in range(kv.num_workers)}
            assert want <= labels, (sorted(want), sorted(labels))
            print('merged: rows for', sorted(want))
