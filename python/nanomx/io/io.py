"""DataDesc, DataBatch, the DataIter protocol and NDArrayIter, with MXNet 1.x's semantics
(docs/symbolic.md): sources sorted by name and converted to float32 arrays, batches along the
first axis, the last partial batch padded from the start ('pad'), dropped ('discard') or carried
into the next epoch ('roll_over')."""
from collections import OrderedDict, namedtuple

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """(name, shape) — a 2-tuple as far as unpacking and comparison go — with the extra
    attributes dtype (float32 by default) and layout ('NCHW')."""

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super(DataDesc, cls).__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The index of 'N' in layout (0 without a layout)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from [(name, shape)] and optionally [(name, dtype)]."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch(object):
    """One batch: lists of data and label arrays, `pad` (filler examples at the end), `index`,
    and optionally the batch's own provide_data / provide_label."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None:
            assert isinstance(data, (list, tuple)), "Data must be list of NDArrays"
        if label is not None:
            assert isinstance(label, (list, tuple)), "Label must be list of NDArrays"
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lb.shape for lb in self.label] if self.label else None
        return "{}: data shapes: {} label shapes: {}".format(self.__class__.__name__,
                                                             data_shapes, label_shapes)


class DataIter(object):
    """The iterator protocol: next() = iter_next() then a DataBatch of getdata(), getlabel(),
    getpad(), getindex(); reset() starts over."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        pass

    def next(self):
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        pass

    def getdata(self):
        pass

    def getlabel(self):
        pass

    def getindex(self):
        return None

    def getpad(self):
        pass


def _init_data(data, allow_empty, default_name):
    """[(name, NDArray)] sorted by name from an array, a list or a dict of arrays."""
    if data is None:
        if not allow_empty:
            raise ValueError("NDArrayIter: data must not be None")
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, list):
        if not allow_empty and not data:
            raise ValueError("NDArrayIter: data must not be an empty list")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([("_%d_%s" % (i, default_name), d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("Input must be NDArray, numpy.ndarray, a list of them or dict with them "
                        "as values")
    data = OrderedDict(data)
    for k, v in data.items():
        if not isinstance(v, NDArray):
            try:
                data[k] = nd.array(v)
            except Exception:
                raise TypeError("Invalid type '%s' for %s, should be NDArray or numpy.ndarray"
                                % (type(v), k)) from None
    return list(sorted(data.items()))


def _getdata_by_idx(data, idx):
    # nd.array of a numpy array: float32, as MXNet's shuffle does whatever the source dtype
    return [(k, nd.array(v.asnumpy()[idx], v.context)) for k, v in data]


class NDArrayIter(DataIter):
    """Batches over in-memory arrays (numpy arrays become float32 NDArrays).

    last_batch_handle: 'pad' completes the last batch with examples from the start (its `pad`
    says how many); 'discard' drops it; 'roll_over' keeps it and starts the next epoch with it
    (that first batch reports `pad` = the number of carried examples, as MXNet does).
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label", layout="NCHW"):
        super(NDArrayIter, self).__init__(batch_size)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError("NDArrayIter: last_batch_handle must be 'pad', 'discard' or "
                             "'roll_over', got %r" % (last_batch_handle,))
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("NDArrayIter: batch_size must be a positive int, got %r"
                             % (batch_size,))
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        self.num_data = self.data[0][1].shape[0]
        for name, array in self.data + self.label:
            if array.shape[0] != self.num_data:
                raise ValueError("NDArrayIter: %s has %d examples but %s has %d (the first axis "
                                 "must agree)" % (name, array.shape[0], self.data[0][0],
                                                  self.num_data))
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -self.batch_size
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)
        # the short last batch, kept for the next epoch ('roll_over', 'discard')
        self._cache_data = None
        self._cache_label = None
        self.layout = layout

    @property
    def provide_data(self):
        return [DataDesc(k, tuple([self.batch_size] + list(v.shape[1:])), v.dtype,
                         layout=self.layout) for k, v in self.data]

    @property
    def provide_label(self):
        return [DataDesc(k, tuple([self.batch_size] + list(v.shape[1:])), v.dtype,
                         layout=self.layout) for k, v in self.label]

    def hard_reset(self):
        """Starts over and drops any carried-over examples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == "roll_over" and \
                self.num_data - self.batch_size < self.cursor < self.num_data:
            # (cursor - num_data) is minus the number of examples carried over
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[0] != self.batch_size:
            # an incomplete batch: kept for the next epoch
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, data_source, start=None, end=None):
        assert start is not None or end is not None, "should at least specify start or end"
        start = start if start is not None else 0
        if end is None:
            end = data_source[0][1].shape[0] if data_source else 0
        return [nd.slice_axis(x[1], axis=0, begin=start, end=end) for x in data_source]

    @staticmethod
    def _concat(first_data, second_data):
        if (not first_data) or (not second_data):
            return first_data if first_data else second_data
        assert len(first_data) == len(second_data), "data source should contain the same size"
        return [nd.concat(first_data[i], second_data[i], dim=0) for i in range(len(first_data))]

    @staticmethod
    def _tile(data, repeats):
        if not data:
            return []
        res = []
        for datum in data:
            reps = [1] * len(datum.shape)
            reps[0] = repeats
            res.append(nd.tile(datum, reps=tuple(reps)))
        return res

    def _batchify(self, data_source):
        assert self.cursor < self.num_data, "DataIter needs reset."
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            # the first batch of an epoch after a carried-over one
            assert self._cache_data is not None or self._cache_label is not None, \
                "next epoch should have cached data"
            cache_data = self._cache_data if self._cache_data is not None else self._cache_label
            second_data = self._getdata(data_source, end=self.cursor + self.batch_size)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache_data, second_data)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first_data = self._getdata(data_source, start=self.cursor)
            if pad > self.num_data:
                repeats = pad // self.num_data
                second_data = self._tile(self._getdata(data_source, end=self.num_data), repeats)
                if pad % self.num_data != 0:
                    second_data = self._concat(second_data,
                                               self._getdata(data_source,
                                                             end=pad % self.num_data))
            else:
                second_data = self._getdata(data_source, end=pad)
            return self._concat(first_data, second_data)
        end_idx = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(data_source, self.cursor, end_idx)

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        np.random.shuffle(self.idx)
        self.data = _getdata_by_idx(self.data, self.idx)
        self.label = _getdata_by_idx(self.label, self.idx)
