"""MXNet 1.x's KVStore on nanomx's C API (docs/kvstore.md).

``create('local' | 'device')`` keeps the values in this process; ``create('dist_sync' |
'dist_async' | 'dist_device_sync')`` keeps them on the server processes of a job started by
``python3 -m nanomx.tools.launch``. Pushes and pulls are asynchronous engine operations:
``kv.pull(key, out=a)`` returns at once and ``a.asnumpy()`` waits for the value.
"""
import atexit
import os
import pickle
import sys

import numpy as np

from .. import optimizer as opt
from .. import profiler
from ..base import MXNetError, _LIB
from ..ndarray import NDArray

__all__ = ["KVStore", "create"]


def _flatten(keys, values, what):
    """(list of keys, list of arrays): a key given several arrays repeats, as MXNet."""
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(values) != len(keys):
            raise ValueError("KVStore.%s: %d keys need a list of %d values, got %r"
                             % (what, len(keys), len(keys), type(values).__name__))
        out_keys, out_values = [], []
        for key, value in zip(keys, values):
            k, v = _flatten(key, value, what)
            out_keys += k
            out_values += v
        return out_keys, out_values
    if isinstance(keys, (int, np.integer)) and not isinstance(keys, bool):
        key = int(keys)
    elif isinstance(keys, str):
        key = keys
    else:
        raise TypeError("KVStore.%s: a key must be an int or a str, got %r" % (what, keys))
    if isinstance(values, NDArray):
        return [key], [values]
    if isinstance(values, (list, tuple)) and values and all(isinstance(v, NDArray)
                                                           for v in values):
        return [key] * len(values), list(values)
    raise TypeError("KVStore.%s: the value of key %r must be an NDArray or a list of NDArrays, "
                    "got %r" % (what, key, values))


def _keys_and_handles(keys, values, what):
    flat_keys, flat_values = _flatten(keys, values, what)
    kinds = {type(k) for k in flat_keys}
    if len(kinds) > 1:
        raise MXNetError("inconsistent types of keys detected.")
    return flat_keys, [v.handle for v in flat_values]


def _is_worker():
    return os.environ.get("DMLC_ROLE", "worker") in ("", "worker")


class KVStore(object):
    """A key-value store: ``init``, ``push``, ``pull`` of NDArrays by int or str key."""

    def __init__(self, handle):
        self.handle = handle
        self._updater = None
        self._updater_func = None

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None and _LIB is not None:
            try:
                _LIB.kv_free(handle)
            except Exception:  # noqa: BLE001 (interpreter teardown)
                pass

    # ---- data -----------------------------------------------------------------------------
    def init(self, key, value):
        """Initialises each key once (a second init of a key is an error). Dist: rank 0's
        value is sent to the servers; every worker then waits at a barrier."""
        keys, handles = _keys_and_handles(key, value, "init")
        _LIB.kv_init(self.handle, keys, handles)

    def push(self, key, value, priority=0):
        """Pushes values; several values for one key are summed first. Local stores replace
        the value with that sum (or run the updater); dist stores send it to the servers."""
        keys, handles = _keys_and_handles(key, value, "push")
        _LIB.kv_push(self.handle, keys, handles, int(priority))

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies the stored value into each array of ``out`` (required)."""
        assert out is not None, "KVStore.pull: out is required"
        if not ignore_sparse:
            raise MXNetError("KVStore.pull: ignore_sparse=False is not supported (dense "
                             "values only)")
        keys, handles = _keys_and_handles(key, out, "pull")
        _LIB.kv_pull(self.handle, keys, handles, int(priority))

    def pushpull(self, key, value, out=None, priority=0):
        """push, then pull into ``out`` (into ``value`` when out is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """init, then pull into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):  # noqa: ARG002
        raise MXNetError("KVStore.row_sparse_pull is not supported: nanomx's kvstore holds "
                         "dense values only (use pull)")

    # ---- updates ----------------------------------------------------------------------------
    def set_gradient_compression(self, compression_params):  # noqa: ARG002
        raise MXNetError("KVStore.set_gradient_compression is not supported by nanomx "
                         "(docs/kvstore.md)")

    def set_optimizer(self, optimizer):
        """Dist worker: the optimizer is pickled to every server, which applies it to each
        round's pushes. Otherwise it runs in this process on every push."""
        if not isinstance(optimizer, opt.Optimizer):
            raise TypeError("KVStore.set_optimizer: expected an mx.optimizer.Optimizer, got %r"
                            % (optimizer,))
        if "dist" in self.type and _is_worker():
            body = pickle.dumps(optimizer, 0)
            self._send_command_to_servers(0, body)
        else:
            self._set_updater(opt.get_updater(optimizer))

    def _set_updater(self, updater):
        """``updater(key, recv, stored)`` runs on every push (local) or on the servers."""
        self._updater = updater
        _LIB.kv_set_updater(self.handle, updater)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        assert self._updater is not None, "Cannot save states for distributed training"
        with open(fname, "wb") as fout:
            fout.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        assert self._updater is not None, "Cannot load states for distributed training"
        with open(fname, "rb") as fin:
            self._updater.set_states(fin.read())

    # ---- job ----------------------------------------------------------------------------------
    @property
    def type(self):
        return _LIB.kv_type(self.handle)

    @property
    def rank(self):
        return _LIB.kv_rank(self.handle)

    @property
    def num_workers(self):
        return _LIB.kv_num_workers(self.handle)

    def barrier(self):
        """Waits until every worker reached its barrier (no-op for local stores)."""
        _LIB.kv_barrier(self.handle)

    _barrier = barrier

    def _send_command_to_servers(self, head, body):
        if isinstance(body, bytes):
            body = body.decode("latin-1")
        _LIB.kv_send_command(self.handle, int(head), str(body))

    def is_capable(self, capability):
        if capability.lower() == "optimizer":
            return True
        raise ValueError("Unknown capability: %s" % capability)


_failed = False
_hooked = False


def _on_exit():
    # After an uncaught error the other ranks may never answer: let the launcher end the job.
    _LIB.kv_shutdown(not _failed)


def _hook_exit():
    """Ends the job cleanly at exit, or leaves it to the launcher after an uncaught error."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def excepthook(*args):
        global _failed
        _failed = True
        previous(*args)

    sys.excepthook = excepthook
    atexit.register(_on_exit)


def create(name="local"):
    """A new KVStore: 'local', 'device', 'dist_sync', 'dist_async' or 'dist_device_sync'."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    handle = _LIB.kv_create(name)
    kv = KVStore(handle)
    if "dist" in name and _is_worker():
        _hook_exit()
    profiler.set_kvstore_handle(kv)
    return kv
