"""mx.gluon.loss: every loss against a numpy reference of MXNet 1.9.1's formula, imperatively
and hybridized (the symbol path), with weights and sample weights, and gradients through
autograd for the softmax cross-entropy; and the gluon.utils helpers (split_and_load,
clip_global_norm, check_sha1, download, shape_is_known)."""
import hashlib

import numpy as np
import pytest

import nanomx as mx
from nanomx import autograd, gluon
from nanomx.gluon import loss as gloss
from nanomx.gluon import utils as gutils

RNG = np.random.RandomState(42)


def _nd(a):
    return mx.nd.array(np.asarray(a, dtype=np.float32))


def _both(loss_fn, *inputs):
    """The loss imperatively, then hybridized (a fresh graph), as numpy arrays."""
    arrays = [None if a is None else _nd(a) for a in inputs]
    imperative = loss_fn(*arrays).asnumpy()
    loss_fn.hybridize()
    hybrid = loss_fn(*arrays).asnumpy()
    loss_fn.hybridize(active=False)
    return imperative, hybrid


def _check(loss_fn, expected, *inputs, rtol=1e-5, atol=1e-6):
    imperative, hybrid = _both(loss_fn, *inputs)
    np.testing.assert_allclose(imperative, expected, rtol=rtol, atol=atol)
    np.testing.assert_allclose(hybrid, expected, rtol=rtol, atol=atol)


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


pred = RNG.randn(4, 3).astype(np.float32)
label = RNG.randn(4, 3).astype(np.float32)
sw = RNG.rand(4, 1).astype(np.float32)


def test_l2_l1():
    _check(gloss.L2Loss(), (0.5 * (label - pred) ** 2).mean(axis=1), pred, label)
    _check(gloss.L2Loss(weight=3.0), (1.5 * (label - pred) ** 2 * sw).mean(axis=1),
           pred, label, sw)
    _check(gloss.L1Loss(), np.abs(label - pred).mean(axis=1), pred, label)
    _check(gloss.L1Loss(weight=0.5), (0.5 * np.abs(label - pred) * sw).mean(axis=1),
           pred, label, sw)
    # the label is reshaped like the prediction: (4,) against (4, 1)
    p1, l1 = RNG.randn(4, 1), RNG.randn(4)
    _check(gloss.L2Loss(), 0.5 * (l1 - p1[:, 0]) ** 2, p1, l1)
    # 3-d predictions: mean over every non-batch axis
    p3, l3 = RNG.randn(2, 3, 4), RNG.randn(2, 3, 4)
    _check(gloss.L1Loss(), np.abs(l3 - p3).mean(axis=(1, 2)), p3, l3)


def test_sigmoid_bce():
    z = (RNG.rand(4, 3) > 0.5).astype(np.float32)
    expected = (np.maximum(pred, 0) - pred * z + np.log1p(np.exp(-np.abs(pred)))).mean(axis=1)
    _check(gloss.SigmoidBinaryCrossEntropyLoss(), expected, pred, z)
    assert gloss.SigmoidBCELoss is gloss.SigmoidBinaryCrossEntropyLoss
    prob = 1 / (1 + np.exp(-pred))
    eps = 1e-12
    expected = (-(np.log(prob + eps) * z + np.log(1 - prob + eps) * (1 - z)) * sw).mean(axis=1)
    _check(gloss.SigmoidBCELoss(from_sigmoid=True), expected, prob, z, sw, rtol=1e-4)
    pos = np.full((4, 3), 2.0, np.float32)
    log_weight = 1 + (pos - 1) * z
    expected = (pred - pred * z + log_weight * (np.log1p(np.exp(-np.abs(pred)))
                                                + np.maximum(-pred, 0))).mean(axis=1)
    _check(gloss.SigmoidBCELoss(), expected, pred, z, None, pos)


def test_softmax_cross_entropy():
    classes = np.array([0, 2, 1, 2], np.float32)
    logp = _log_softmax(pred)
    _check(gloss.SoftmaxCrossEntropyLoss(), -logp[np.arange(4), classes.astype(int)],
           pred, classes)
    _check(gloss.SoftmaxCELoss(weight=2.0), -2 * logp[np.arange(4), classes.astype(int)]
           * sw[:, 0], pred, classes, sw)
    dist = np.exp(_log_softmax(label))
    _check(gloss.SoftmaxCELoss(sparse_label=False), -(logp * dist).sum(axis=1), pred, dist)
    _check(gloss.SoftmaxCELoss(from_logits=True), -pred[np.arange(4), classes.astype(int)],
           pred, classes)
    # class axis 1 of a (batch, classes, width) prediction
    p3 = RNG.randn(2, 3, 5).astype(np.float32)
    c3 = RNG.randint(0, 3, size=(2, 5)).astype(np.float32)
    lp3 = _log_softmax(p3, axis=1)
    picked = np.take_along_axis(lp3, c3.astype(int)[:, None, :], axis=1)[:, 0, :]
    _check(gloss.SoftmaxCELoss(axis=1), -picked.mean(axis=1), p3, c3)


def test_softmax_cross_entropy_gradient():
    # imperatively only: hybridized, the graph uses pick, whose gradient rule nanomx lacks
    classes = np.array([0, 2, 1, 2], np.float32)
    for axis in (-1, 1):
        loss_fn = gloss.SoftmaxCELoss(axis=axis)
        x = _nd(pred)
        x.attach_grad()
        with autograd.record():
            out = loss_fn(x, _nd(classes))
        out.backward()
        onehot = np.eye(3)[classes.astype(int)]
        expected = np.exp(_log_softmax(pred)) - onehot
        np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_kl_div():
    target = np.exp(_log_softmax(label))
    logp = _log_softmax(pred)
    expected = (target * (np.log(target + 1e-12) - logp)).sum(axis=1)
    _check(gloss.KLDivLoss(), expected, logp, target)
    _check(gloss.KLDivLoss(from_logits=False), expected, pred, target)
    _check(gloss.KLDivLoss(weight=0.5), 0.5 * (target * (np.log(target + 1e-12) - logp)
                                               * sw).sum(axis=1), logp, target, sw)


def test_huber_hinge_logistic():
    diff = np.abs(label - pred)
    for rho in (1, 0.5):
        expected = np.where(diff > rho, diff - 0.5 * rho, 0.5 / rho * diff ** 2).mean(axis=1)
        _check(gloss.HuberLoss(rho=rho), expected, pred, label)
    signs = np.sign(RNG.randn(4, 3)).astype(np.float32)
    _check(gloss.HingeLoss(), np.maximum(0, 1 - pred * signs).mean(axis=1), pred, signs)
    _check(gloss.HingeLoss(margin=2), (np.maximum(0, 2 - pred * signs) * sw).mean(axis=1),
           pred, signs, sw)
    _check(gloss.SquaredHingeLoss(), (np.maximum(0, 1 - pred * signs) ** 2).mean(axis=1),
           pred, signs)
    _check(gloss.LogisticLoss(), np.log1p(np.exp(-pred * signs)).mean(axis=1), pred, signs)
    binary = (signs + 1) / 2
    _check(gloss.LogisticLoss(label_format="binary"),
           np.log1p(np.exp(-pred * signs)).mean(axis=1), pred, binary)
    with pytest.raises(ValueError, match="label_format can only be signed or binary"):
        gloss.LogisticLoss(label_format="other")


def test_triplet_poisson_cosine():
    pos, neg = RNG.randn(4, 3), RNG.randn(4, 3)
    expected = np.maximum(((pos - pred) ** 2 - (neg - pred) ** 2).sum(axis=1) + 1, 0)
    _check(gloss.TripletLoss(), expected, pred, pos, neg)
    counts = RNG.poisson(2.0, size=(4, 3)).astype(np.float32)
    _check(gloss.PoissonNLLLoss(), np.mean(np.exp(pred) - counts * pred), pred, counts)
    rate = np.exp(pred)
    _check(gloss.PoissonNLLLoss(from_logits=False),
           np.mean(rate - counts * np.log(rate + 1e-8)), rate, counts, rtol=1e-4)
    counts = counts + 1  # Stirling's term is nan at 0 (log 0 times 0), as in MXNet
    stirling = (counts * np.log(counts) - counts + 0.5 * np.log(2 * counts * np.pi)) * (
        counts > 1)
    _check(gloss.PoissonNLLLoss(compute_full=True),
           np.mean(np.exp(pred) - counts * pred + stirling), pred, counts, rtol=1e-4)
    a, b = RNG.randn(4, 5), RNG.randn(4, 5)
    y = np.array([1, -1, 1, -1], np.float32)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1),
                                      1e-12)
    expected = np.where(y == 1, 1 - cos, np.maximum(0, cos - 0.1))[:, None]
    _check(gloss.CosineEmbeddingLoss(margin=0.1), expected, a, b, y, rtol=1e-4)


def test_loss_blocks_and_ctc():
    loss_fn = gloss.L2Loss(weight=2.0, batch_axis=0)
    assert repr(loss_fn) == "L2Loss(batch_axis=0, w=2.0)"
    assert isinstance(loss_fn, gluon.HybridBlock)
    assert loss_fn.prefix.startswith("l2loss")
    with pytest.raises(NotImplementedError, match="CTC"):
        gloss.CTCLoss()
    with pytest.raises(AssertionError, match="weight must be a number"):
        gloss.L1Loss(weight="heavy")(_nd(pred), _nd(label))


def test_loss_batch_axis_one():
    p = RNG.randn(3, 4).astype(np.float32)
    q = RNG.randn(3, 4).astype(np.float32)
    _check(gloss.L2Loss(batch_axis=1), (0.5 * (q - p) ** 2).mean(axis=0), p, q)


# ---- gluon.utils --------------------------------------------------------------------------------
def test_split_and_load_and_clip_global_norm():
    x = mx.nd.arange(12).reshape((6, 2))
    parts = gutils.split_data(x, 3)
    assert [p.shape for p in parts] == [(2, 2)] * 3
    with pytest.raises(ValueError, match="cannot be evenly split"):
        gutils.split_data(x, 4)
    uneven = gutils.split_data(x, 4, even_split=False)
    assert [p.shape[0] for p in uneven] == [2, 2, 1, 1]
    cols = gutils.split_data(x, 2, batch_axis=1)
    np.testing.assert_array_equal(cols[1].asnumpy().ravel(), np.arange(1, 12, 2))
    loaded = gutils.split_and_load(np.arange(8).reshape(4, 2), [mx.cpu(0), mx.cpu(1)])
    assert [a.context for a in loaded] == [mx.cpu(0), mx.cpu(1)]
    arrays = [mx.nd.array([3.0, 4.0]), mx.nd.array([12.0])]
    norm = gutils.clip_global_norm(arrays, 6.5)
    assert norm == pytest.approx(13.0)
    np.testing.assert_allclose(arrays[0].asnumpy(), [1.5, 2.0], rtol=1e-5)
    small = [mx.nd.array([0.3, 0.4])]
    gutils.clip_global_norm(small, 1.0)
    np.testing.assert_allclose(small[0].asnumpy(), [0.3, 0.4], rtol=1e-6)


def test_check_sha1_download_shape_is_known(tmp_path):
    f = tmp_path / "file.bin"
    f.write_bytes(b"nanomx")
    digest = hashlib.sha1(b"nanomx").hexdigest()
    assert gutils.check_sha1(str(f), digest) and not gutils.check_sha1(str(f), "0" * 40)
    assert gutils.download("http://example.com/file.bin", path=str(tmp_path),
                           sha1_hash=digest) == str(f)
    with pytest.raises(mx.MXNetError, match="does not download"):
        gutils.download("http://example.com/other.bin", path=str(tmp_path))
    assert gutils.shape_is_known((2, 3)) and not gutils.shape_is_known((2, 0))
    assert not gutils.shape_is_known(None) and not gutils.shape_is_known((-1, 2))
