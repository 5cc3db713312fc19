"""DataLoader: batches of a dataset, in order of a batch sampler (MXNet 1.9.1's behaviour).

Workers: with num_workers=0 batches are made in the calling thread when asked for. With
num_workers > 0 a pool of that many Python threads makes them ahead of use (`prefetch`
batches, 2 * num_workers by default) and hands them back in order. nanomx always uses threads,
whatever `thread_pool` says: its operators run on the engine's own threads without the GIL, so
batchify (stacking) runs in parallel, and no process is forked from a running engine (MXNet's
process workers need shared-memory NDArrays, which nanomx does not have).
"""
import numpy as np

from ... import context
from ... import ndarray as nd
from . import sampler as _sampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data):
    """Stacks a list of samples into a batch: NDArrays with nd.stack, tuples field by field
    (a list with one batch per field), anything else through numpy into an NDArray of the
    values' own dtype."""
    first = data[0]
    if isinstance(first, nd.NDArray):
        return nd.stack(*data)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    values = np.asarray(data)
    if values.dtype == np.object_:
        raise TypeError("default_batchify_fn: cannot stack samples of type %s into an NDArray; "
                        "pass a batchify_fn" % type(first).__name__)
    return nd.array(values, dtype=values.dtype)


# MXNet's process workers stack into shared memory; nanomx's thread workers need nothing more.
default_mp_batchify_fn = default_batchify_fn


def _as_in_context(data, ctx):
    """Moves every NDArray of a (nested) batch to ctx."""
    if isinstance(data, nd.NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


def _thread_worker_fn(samples, batchify_fn, dataset):
    return batchify_fn([dataset[i] for i in samples])


class _MultiWorkerIter(object):
    """Hands out the batches a worker pool makes, in sampler order, keeping `prefetch`
    requests ahead of the consumer."""

    def __init__(self, worker_pool, batchify_fn, batch_sampler, dataset, pin_memory=False,
                 pin_device_id=0, prefetch=0, timeout=120):
        self._worker_pool = worker_pool
        self._batchify_fn = batchify_fn
        self._batch_sampler = batch_sampler
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._timeout = timeout
        self._pending = {}
        self._received = 0
        self._sent = 0
        self._iter = iter(batch_sampler)
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def _push_next(self):
        indices = next(self._iter, None)
        if indices is None:
            return
        self._pending[self._sent] = self._worker_pool.apply_async(
            _thread_worker_fn, (indices, self._batchify_fn, self._dataset))
        self._sent += 1

    def __next__(self):
        self._push_next()
        if self._received == self._sent:
            raise StopIteration
        import multiprocessing  # noqa: PLC0415 (loaded only with workers)
        result = self._pending.pop(self._received)
        try:
            batch = result.get(self._timeout)
        except multiprocessing.TimeoutError:
            raise multiprocessing.TimeoutError(
                "Worker timed out after %s seconds. This might be caused by a slow transform: "
                "increase timeout to allow slower data loading in each worker."
                % self._timeout) from None
        if self._pin_memory:
            batch = _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
        self._received += 1
        return batch

    next = __next__

    def __iter__(self):
        return self


class DataLoader(object):
    """Loads a dataset in mini-batches.

    dataset: any dataset (numpy arrays, NDArrays and lists work too).
    batch_size, shuffle, sampler, last_batch ('keep' by default, 'discard', 'rollover'):
        how batches are drawn, unless batch_sampler (which yields lists of indices) is given,
        in which case none of them may be.
    batchify_fn: merges a list of samples into a batch (default_batchify_fn stacks them).
    num_workers: 0 makes batches in the calling thread; more uses that many worker threads
        (see the module docstring); thread_pool is accepted for compatibility.
    pin_memory, pin_device_id: copy batches to cpu_pinned(pin_device_id).
    prefetch: batches requested ahead with workers (default 2 * num_workers).
    timeout: seconds to wait for one worker batch.
    auto_reload: start the next epoch's prefetch as soon as one epoch ends.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        if not timeout > 0:
            raise AssertionError("timeout must be positive, given {}".format(timeout))
        self._timeout = timeout

        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless "
                                 "batch_sampler is specified")
            if sampler is None:
                if shuffle:
                    sampler = _sampler.RandomSampler(len(dataset))
                else:
                    sampler = _sampler.SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(
                sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None \
                or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must "
                             "not be specified if batch_sampler is specified.")
        if batchify_fn is not None and not callable(batchify_fn):
            raise TypeError("batchify_fn must be callable, got %s" % type(batchify_fn).__name__)

        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        self._worker_pool = None
        if self._num_workers > 0:
            # Imported here: multiprocessing.pool costs ~10 ms, paid only with workers.
            import multiprocessing.pool  # noqa: PLC0415
            self._worker_pool = multiprocessing.pool.ThreadPool(self._num_workers)
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn
        self.auto_reload = auto_reload
        self._iter = None
        if self.auto_reload:
            self.refresh()

    def __iter__(self):
        if self._iter is None:
            self.refresh()
        current, self._iter = self._iter, None
        for batch in current:
            yield batch
        if self._iter is None and self.auto_reload:
            self.refresh()

    def _prefetch_iter(self):
        if self._num_workers == 0:
            return self._same_thread_iter()
        return _MultiWorkerIter(self._worker_pool, self._batchify_fn, self._batch_sampler,
                                self._dataset, pin_memory=self._pin_memory,
                                pin_device_id=self._pin_device_id, prefetch=self._prefetch,
                                timeout=self._timeout)

    def _same_thread_iter(self):
        for indices in self._batch_sampler:
            batch = self._batchify_fn([self._dataset[i] for i in indices])
            if self._pin_memory:
                batch = _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
            yield batch

    def __len__(self):
        return len(self._batch_sampler)

    def refresh(self):
        """Starts a new pass now (with workers, its first batches are requested at once)."""
        self._iter = self._prefetch_iter()

    def clean(self):
        """Drops the prepared pass; the next iteration starts a new one."""
        self._iter = None

    def __del__(self):
        pool = getattr(self, "_worker_pool", None)
        if pool is not None:
            pool.terminate()
