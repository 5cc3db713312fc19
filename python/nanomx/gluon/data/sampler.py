"""Samplers: the index streams a DataLoader turns into batches (MXNet 1.x's gluon.data.sampler).

A sampler is any object with __iter__ (indices) and __len__ (how many it yields). BatchSampler
groups another sampler's indices into lists; what it does with a short last group is its
`last_batch` policy: 'keep' it, 'discard' it, or 'rollover' it to the front of the next pass.
"""
import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler"]

_LAST_BATCH = ("keep", "discard", "rollover")


def _check_last_batch(last_batch):
    if last_batch not in _LAST_BATCH:
        raise ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', "
                         "but got %s" % (last_batch,))


def _check_length(length, what):
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise TypeError("%s must be an int, got %s" % (what, type(length).__name__))
    if length < 0:
        raise ValueError("%s must be non-negative, got %d" % (what, length))
    return int(length)


class Sampler(object):
    """The interface of samplers: subclasses define __iter__ and __len__."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Yields start, start + 1, ..., start + length - 1 in order."""

    def __init__(self, length, start=0):
        self._length = _check_length(length, "length")
        self._start = _check_length(start, "start")

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """Yields a fresh permutation of range(length) on every pass.

    The permutation comes from numpy's global generator (np.random.seed controls it), as in
    MXNet, so mx.random.seed does not change the order."""

    def __init__(self, length):
        self._length = _check_length(length, "length")

    def __iter__(self):
        order = np.arange(self._length)
        np.random.shuffle(order)
        return iter(order.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of `dataset` for which `fn(sample)` is true.

    The dataset is read once, at construction, to find them."""

    def __init__(self, fn, dataset):
        if not callable(fn):
            raise TypeError("FilterSampler: fn must be callable, got %s" % type(fn).__name__)
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size`.

    last_batch: 'keep' yields a short last list, 'discard' drops it and 'rollover' holds it
    back and puts it in front of the next pass's first list.

    >>> list(BatchSampler(SequentialSampler(10), 3, 'keep'))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size <= 0:
            raise ValueError("batch_size must be a positive integer, got %r" % (batch_size,))
        _check_last_batch(last_batch)
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for index in self._sampler:
            batch.append(index)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if not batch:
            return
        if self._last_batch == "keep":
            yield batch
        elif self._last_batch == "rollover":
            self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
