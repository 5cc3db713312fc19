"""mx.io (DataDesc, DataBatch, NDArrayIter's pad/discard/roll_over, shuffle, sources) and
mx.metric (Accuracy, CrossEntropy, composite, create, local/global counters)."""
import math

import numpy as np
import pytest

import nanomx as mx


def _epoch(it):
    return [(b.data[0].asnumpy().ravel().astype(int).tolist(), b.pad) for b in it]


def test_data_desc_is_a_name_shape_pair():
    d = mx.io.DataDesc("data", (3, 2, 2))
    name, shape = d
    assert (name, shape) == ("data", (3, 2, 2)) and d == ("data", (3, 2, 2))
    assert d.dtype is np.float32 and d.layout == "NCHW"
    assert repr(d) == "DataDesc[data,(3, 2, 2),<class 'numpy.float32'>,NCHW]"
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    descs = mx.io.DataDesc.get_list([("a", (1,))], [("a", np.int32)])
    assert descs[0].dtype is np.int32


def test_data_batch():
    b = mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1)
    assert str(b) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    with pytest.raises(AssertionError, match="Data must be list of NDArrays"):
        mx.io.DataBatch(mx.nd.zeros((2,)))


def test_pad_discard_roll_over_counts():
    data = np.arange(10).reshape(10, 1)
    it = mx.io.NDArrayIter(data, batch_size=3, last_batch_handle="pad")
    batches = _epoch(it)
    assert len(batches) == 4 and batches[-1] == ([9, 0, 1], 2)
    it.reset()
    assert len(_epoch(it)) == 4
    it = mx.io.NDArrayIter(data, batch_size=3, last_batch_handle="discard")
    assert [p for _, p in _epoch(it)] == [0, 0, 0]
    it = mx.io.NDArrayIter(data, batch_size=3, last_batch_handle="roll_over")
    assert len(_epoch(it)) == 3
    it.reset()
    second = _epoch(it)
    assert second[0] == ([9, 0, 1], 1) and len(second) == 3
    it.reset()
    third = _epoch(it)
    assert third[0] == ([8, 9, 0], 2) and len(third) == 4
    it.hard_reset()
    assert _epoch(it)[0] == ([0, 1, 2], 0)


def test_pad_tiles_a_dataset_smaller_than_the_pad():
    it = mx.io.NDArrayIter(np.arange(2).reshape(2, 1), batch_size=7)
    (values, pad), = _epoch(it)
    assert values == [0, 1, 0, 1, 0, 1, 0] and pad == 5


def test_sources_names_dtypes_and_provide():
    it = mx.io.NDArrayIter({"b": np.zeros((4, 2), np.int32), "a": np.ones((4, 3))},
                           label=[np.zeros(4), np.ones(4)], batch_size=2)
    assert [d.name for d in it.provide_data] == ["a", "b"]
    assert it.provide_data[0] == ("a", (2, 3))
    assert all(d.dtype == np.float32 for d in it.provide_data)  # numpy becomes float32
    assert [d.name for d in it.provide_label] == ["_0_softmax_label", "_1_softmax_label"]
    batch = next(it)
    assert len(batch.data) == 2 and len(batch.label) == 2
    assert batch.data[0].asnumpy().tolist() == [[1, 1, 1], [1, 1, 1]]
    it = mx.io.NDArrayIter(np.zeros((3, 1)), batch_size=2)
    assert it.provide_label == [] and next(it).label == []
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.io.NDArrayIter(np.zeros((3, 1)), last_batch_handle="keep")
    with pytest.raises(ValueError, match="first axis"):
        mx.io.NDArrayIter(np.zeros((3, 1)), np.zeros(4))


def test_shuffle_keeps_data_and_labels_together():
    np.random.seed(3)
    data = np.arange(20).reshape(20, 1)
    it = mx.io.NDArrayIter(data, data.ravel() * 10, batch_size=5, shuffle=True)
    seen = []
    for batch in it:
        d = batch.data[0].asnumpy().ravel()
        np.testing.assert_array_equal(batch.label[0].asnumpy(), d * 10)
        seen.extend(d.astype(int).tolist())
    assert sorted(seen) == list(range(20)) and seen != list(range(20))


def test_iterates_as_a_python_iterator():
    it = mx.io.NDArrayIter(np.zeros((4, 1)), batch_size=2)
    assert iter(it) is it
    next(it)
    next(it)
    with pytest.raises(StopIteration):
        next(it)


# ---- metrics --------------------------------------------------------------------------------
def test_accuracy_argmax_and_counters():
    acc = mx.metric.create("acc")
    assert isinstance(acc, mx.metric.Accuracy) and acc.name == "accuracy"
    assert math.isnan(acc.get()[1])
    preds = mx.nd.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    acc.update([mx.nd.array([0, 1, 1])], [preds])
    assert acc.get() == ("accuracy", 2 / 3.)
    acc.reset_local()
    acc.update([mx.nd.array([1])], [mx.nd.array([[0.1, 0.9]])])
    assert acc.get() == ("accuracy", 1.0)
    assert acc.get_global() == ("accuracy", 3 / 4.)
    assert acc.get_name_value() == [("accuracy", 1.0)]
    assert str(acc) == "EvalMetric: {'accuracy': 1.0}"
    # same shapes: compared directly (truncated to int)
    acc.reset()
    acc.update([mx.nd.array([1, 2])], [mx.nd.array([1.7, 0.2])])
    assert acc.get()[1] == 0.5
    with pytest.raises(ValueError, match="Shape of labels 2 does not match shape of "
                                         "predictions 1"):
        acc.update([preds, preds], [preds])


def test_cross_entropy():
    ce = mx.metric.create("ce")
    assert ce.name == "cross-entropy"
    preds = np.array([[0.25, 0.75], [0.9, 0.1]], dtype=np.float32)
    ce.update(mx.nd.array([1, 0]), mx.nd.array(preds))
    assert ce.get()[1] == pytest.approx(-(math.log(0.75) + math.log(0.9)) / 2, rel=1e-6)


def test_composite_create_and_update_dict():
    comp = mx.metric.create(["acc", mx.metric.CrossEntropy()])
    assert isinstance(comp, mx.metric.CompositeEvalMetric)
    labels = {"softmax_label": mx.nd.array([1])}
    preds = {"softmax_output": mx.nd.array([[0.5, 0.5]])}
    comp.update_dict(labels, preds)
    names, values = comp.get()
    assert names == ["accuracy", "cross-entropy"]
    assert values[1] == pytest.approx(-math.log(0.5))
    custom = mx.metric.create(lambda label, pred: float((label == pred.argmax(1)).sum()))
    assert isinstance(custom, mx.metric.CustomMetric)
    mse = mx.metric.create("mse")
    mse.update([mx.nd.array([1, 2])], [mx.nd.array([1, 4])])
    assert mse.get() == ("mse", 2.0)
    with pytest.raises(ValueError, match="Cannot find metric nosuch"):
        mx.metric.create("nosuch")
