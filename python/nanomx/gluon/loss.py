"""Gluon losses (MXNet 1.9.1's gluon.loss): HybridBlocks computing one loss per sample.

Each loss is computed elementwise, weighted (the constructor's `weight` and an optional
`sample_weight` broadcast against it) and reduced over every axis but `batch_axis` (mean, or
sum for KLDivLoss), as MXNet's formulas do.

Symbols: MXNet reshapes the label like the prediction with reshape_like. nanomx's symbol API
has no reshape_like operator, so in a hybridized loss the prediction, label and sample weight
are all viewed as (batch, -1) instead (batch_axis 0; with another batch axis the label must
already have the prediction's shape). The per-sample result is the same.
"""
import numpy as np

from .. import ndarray
from ..base import numeric_types
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss",
           "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss",
           "CosineEmbeddingLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """loss * sample_weight (broadcast) * weight (a number)."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        assert isinstance(weight, numeric_types), "weight must be a number"
        loss = loss * weight
    return loss


def _match(F, batch_axis, pred, like=(), weights=()):
    """`pred`, the arrays of `like` (labels) and of `weights` (sample weights, broadcast
    against the loss) in shapes that combine: the labels reshaped to pred's shape for
    NDArrays; for Symbols everything viewed as (batch, -1) (see the module docstring). None
    entries stay None."""
    if F is ndarray:
        return ((pred,) + tuple(None if o is None else o.reshape(pred.shape) for o in like)
                + tuple(weights))
    if hasattr(F, "reshape_like"):
        return ((pred,) + tuple(None if o is None else F.reshape_like(o, pred) for o in like)
                + tuple(weights))
    if batch_axis != 0:
        return (pred,) + tuple(like) + tuple(weights)
    return tuple(None if x is None else F.reshape(x, shape=(0, -1))
                 for x in (pred,) + tuple(like) + tuple(weights))


def _compare_scalar(F, x, op, value):
    """x <op> value as 0/1 of x's dtype (Symbols have no comparison operators in nanomx)."""
    if F is ndarray:
        return x == value if op == "equal" else x > value
    return getattr(F._internal, "_%s_scalar" % op)(x, scalar=value)


def _one_hot_like(F, label, pred, axis):
    """The one-hot encoding of `label` laid out like `pred` (classes along `axis`).

    MXNet picks -log p[label] with pick; nanomx's pick has no gradient rule yet, so the
    imperative loss multiplies by this encoding instead (the same value and gradient for
    labels in range; a label outside [0, classes) gives 0 where pick would clip it)."""
    ndim = len(pred.shape)
    axis = axis % ndim
    depth = pred.shape[axis]
    hot = F.one_hot(label.reshape(pred.shape[:axis] + pred.shape[axis + 1:]), depth=depth,
                    dtype=pred.dtype)
    if axis != ndim - 1:
        order = list(range(ndim - 1))
        order.insert(axis, ndim - 1)
        hot = F.transpose(hot, axes=tuple(order))
    return hot


def _maximum_scalar(F, x, value):
    if F is ndarray:
        return F.maximum(x, value)
    return F._internal._maximum_scalar(x, scalar=value)


class Loss(HybridBlock):
    """Base class of the losses: `weight` scales the loss, `batch_axis` is the axis kept."""

    def __init__(self, weight, batch_axis, **kwargs):
        super(Loss, self).__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return "{name}(batch_axis={axis}, w={w})".format(name=self.__class__.__name__,
                                                        axis=self._batch_axis, w=self._weight)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError

    def _mean(self, F, loss):
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L2Loss(Loss):
    """weight/2 * (label - pred)^2, averaged per sample."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super(L2Loss, self).__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label, sample_weight = _match(F, self._batch_axis, pred, (label,),
                                            (sample_weight,))
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return self._mean(F, loss)


class L1Loss(Loss):
    """|label - pred|, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super(L1Loss, self).__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label, sample_weight = _match(F, self._batch_axis, pred, (label,),
                                            (sample_weight,))
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of sigmoid(pred) (or of pred itself with from_sigmoid), in the
    numerically stable form max(x, 0) - x*z + log(1 + exp(-|x|)); pos_weight scales the
    positive term."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super(SigmoidBinaryCrossEntropyLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        pred, label, sample_weight, pos_weight = _match(F, self._batch_axis, pred, (label,),
                                                        (sample_weight, pos_weight))
        if not self._from_sigmoid:
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1. - pred + eps) * (1. - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """-log softmax(pred)[label] along `axis` (sparse_label: class indices; else a
    distribution over the classes); from_logits: pred already holds log-probabilities."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super(SoftmaxCrossEntropyLoss, self).__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label and F is ndarray:
            loss = -F.sum(pred * _one_hot_like(F, label, pred, self._axis), axis=self._axis,
                          keepdims=True)
        elif self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            if F is ndarray:
                label = label.reshape(pred.shape)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """label * (log(label) - pred), summed per sample (from_logits: pred holds
    log-probabilities, else log_softmax is applied along `axis`)."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super(KLDivLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class CTCLoss(Loss):
    """Connectionist temporal classification loss: refused, nanomx has no CTC operator."""

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        assert layout in ["NTC", "TNC"], \
            "Only 'NTC' and 'TNC' layouts for pred are supported. Got: %s" % layout
        assert label_layout in ["NT", "TN"], \
            "Only 'NT' and 'TN' layouts for label are supported. Got: %s" % label_layout
        if not hasattr(ndarray, "CTCLoss"):
            raise NotImplementedError("CTCLoss is not supported by nanomx: it has no CTCLoss "
                                      "(ctc_loss) operator")
        self._layout = layout
        self._label_layout = label_layout
        super(CTCLoss, self).__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        loss = F.CTCLoss(pred, label, pred_lengths, label_lengths,
                         use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smooth L1: |d| - rho/2 where |d| > rho, else d^2 / (2 rho); averaged per sample."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super(HuberLoss, self).__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label, sample_weight = _match(F, self._batch_axis, pred, (label,),
                                            (sample_weight,))
        loss = F.abs(label - pred)
        loss = F.where(_compare_scalar(F, loss, "greater", self._rho), loss - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class HingeLoss(Loss):
    """max(0, margin - pred * label) with labels -1/1; averaged per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(HingeLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label, sample_weight = _match(F, self._batch_axis, pred, (label,),
                                            (sample_weight,))
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class SquaredHingeLoss(Loss):
    """max(0, margin - pred * label)^2 with labels -1/1; averaged per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(SquaredHingeLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label, sample_weight = _match(F, self._batch_axis, pred, (label,),
                                            (sample_weight,))
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class LogisticLoss(Loss):
    """log(1 + exp(-pred * label)) with labels -1/1 ('signed') or 0/1 ('binary')."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super(LogisticLoss, self).__init__(weight, batch_axis, **kwargs)
        self._label_format = label_format
        if self._label_format not in ["signed", "binary"]:
            raise ValueError("label_format can only be signed or binary, recieved %s."
                             % label_format)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        pred, label, sample_weight = _match(F, self._batch_axis, pred, (label,),
                                            (sample_weight,))
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0  # -1/1 -> 0/1
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class TripletLoss(Loss):
    """max(0, |pred - positive|^2 - |pred - negative|^2 + margin) per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super(TripletLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        pred, positive, negative = _match(F, self._batch_axis, pred, (positive, negative))
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, None)


class PoissonNLLLoss(Loss):
    """Negative log-likelihood of `target` under Poisson(exp(pred)) (from_logits) or
    Poisson(pred); compute_full adds Stirling's term for targets > 1. One mean over
    everything (a scalar-shaped (1,) result), as MXNet."""

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super(PoissonNLLLoss, self).__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        pred, target, sample_weight = _match(F, self._batch_axis, pred, (target,),
                                             (sample_weight,))
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            loss = loss + stirling * _compare_scalar(F, target, "greater", 1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """1 - cos(input1, input2) for label 1, max(0, cos - margin) for label -1; one value
    per sample, shape (batch, 1)."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super(CosineEmbeddingLoss, self).__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        if F is ndarray:
            input1 = input1.reshape(input2.shape)
        label = F.reshape(label, shape=(-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = _compare_scalar(F, label, "equal", 1)
        y_minus_1 = _compare_scalar(F, label, "equal", -1)
        cos_sim_a = (1 - cos_sim) * y_1
        cos_sim_b = F.relu(y_minus_1 * (cos_sim - self._margin))
        loss = cos_sim_a + cos_sim_b
        return _apply_weighting(F, loss, self._weight, sample_weight)

    def _cosine_similarity(self, F, x, y, axis=-1):
        x_norm = F.reshape(F.norm(x, axis=axis), shape=(-1, 1))
        y_norm = F.reshape(F.norm(y, axis=axis), shape=(-1, 1))
        x_dot_y = F.reshape(F.sum(x * y, axis=axis), shape=(-1, 1))
        return x_dot_y / _maximum_scalar(F, x_norm * y_norm, 1e-12)
