"""mx.metric: evaluation metrics with MXNet 1.x's semantics (docs/symbolic.md).

A metric keeps a local (sum, count) pair, which Speedometer resets between its log lines, and a
global pair for the epoch; ``update(labels, preds)`` takes lists of NDArrays.
"""
from collections import OrderedDict
import math

import numpy

from . import ndarray
from ._registry import alias_decorator as _alias_decorator
from .base import numeric_types

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "CrossEntropy",
           "MAE", "MSE", "RMSE", "Loss", "CustomMetric", "np", "create", "register", "alias",
           "check_label_shapes"]

_REGISTRY = {}


def register(klass):
    """Registers a metric class under its lower-case class name."""
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Registers further names for a metric class."""
    return _alias_decorator(_REGISTRY, aliases)


def create(metric, *args, **kwargs):
    """A metric from a callable (CustomMetric), a list (CompositeEvalMetric), an instance (as
    is) or a registered name ('acc', 'accuracy', 'ce', 'mse', ...)."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite_metric = CompositeEvalMetric()
        for child_metric in metric:
            composite_metric.add(create(child_metric, *args, **kwargs))
        return composite_metric
    if isinstance(metric, str):
        name = metric.lower()
        if name not in _REGISTRY:
            raise ValueError("Cannot find metric %s. Must be one of %s"
                             % (metric, ", ".join(sorted(_REGISTRY))))
        return _REGISTRY[name](*args, **kwargs)
    raise TypeError("metric.create: expected an EvalMetric, a name, a list or a callable, got %s"
                    % type(metric).__name__)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raises ValueError when labels and preds differ in length (or in shape, with `shape`);
    with `wrap`, single NDArrays come back as one-element lists."""
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError("Shape of labels {} does not match shape of "
                         "predictions {}".format(label_shape, pred_shape))
    if wrap:
        if isinstance(labels, ndarray.NDArray):
            labels = [labels]
        if isinstance(preds, ndarray.NDArray):
            preds = [preds]
    return labels, preds


class EvalMetric(object):
    """Base metric: ``get()`` is (name, sum/num), nan before any update."""

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def get_config(self):
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """update() with the arrays of dicts name -> array, chosen by output_names /
        label_names (all values when those are None)."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        raise NotImplementedError()

    def reset(self):
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        if self._has_global_stats:
            if self.global_num_inst == 0:
                return (self.name, float("nan"))
            return (self.name, self.global_sum_metric / self.global_num_inst)
        return self.get()

    def get_name_value(self):
        name, value = self.get()
        if not isinstance(name, list):
            name = [name]
        if not isinstance(value, list):
            value = [value]
        return list(zip(name, value))

    def get_global_name_value(self):
        if self._has_global_stats:
            name, value = self.get_global()
            if not isinstance(name, list):
                name = [name]
            if not isinstance(value, list):
                value = [value]
            return list(zip(name, value))
        return self.get_name_value()

    def _add(self, value, count):
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; get() returns ([names], [values])."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super(CompositeEvalMetric, self).__init__(name, output_names=output_names,
                                                  label_names=label_names,
                                                  has_global_stats=True)
        if metrics is None:
            metrics = []
        self.metrics = [create(i) for i in metrics]

    def add(self, metric):
        self.metrics.append(create(metric))

    def get_metric(self, index):
        try:
            return self.metrics[index]
        except IndexError:
            return ValueError("Metric index {} is out of range 0 and {}".format(
                index, len(self.metrics)))

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            if isinstance(name, str):
                name = [name]
            if isinstance(value, numeric_types):
                value = [value]
            names.extend(name)
            values.extend(value)
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super(CompositeEvalMetric, self).get_config()
        config.update({"metrics": [i.get_config() for i in self.metrics]})
        return config


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of predictions equal to the label: predictions whose shape differs from the
    label's are argmax'ed over `axis`; both are truncated to int32 and flattened."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super(Accuracy, self).__init__(name, axis=axis, output_names=output_names,
                                       label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            if pred_label.shape != label.shape:
                pred_label = ndarray.argmax(pred_label, axis=self.axis)
            pred_label = pred_label.asnumpy().astype("int32").ravel()
            label = label.asnumpy().astype("int32").ravel()
            check_label_shapes(label, pred_label)
            num_correct = int((pred_label == label).sum())
            self._add(num_correct, len(pred_label))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of labels among the top_k highest-scored classes."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super(TopKAccuracy, self).__init__(name, top_k=top_k, output_names=output_names,
                                           label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise AssertionError("Please use Accuracy if top_k is no more than 1")
        self.name += "_%d" % self.top_k

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            if len(pred_label.shape) > 2:
                raise AssertionError("Predictions should be no more than 2 dims")
            pred_label = numpy.argpartition(pred_label.asnumpy().astype("float32"),
                                            -self.top_k)
            label = label.asnumpy().astype("int32")
            check_label_shapes(label, pred_label)
            num_samples = pred_label.shape[0]
            num_dims = len(pred_label.shape)
            if num_dims == 1:
                num_correct = int((pred_label.flat == label.flat).sum())
            else:
                num_classes = pred_label.shape[1]
                top_k = min(num_classes, self.top_k)
                num_correct = 0
                for j in range(top_k):
                    num_correct += int((pred_label[:, num_classes - 1 - j].flat
                                        == label.flat).sum())
            self._add(num_correct, num_samples)


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean of -log(p[label] + eps) over examples; labels are class indices."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super(CrossEntropy, self).__init__(name, eps=eps, output_names=output_names,
                                           label_names=label_names, has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = label.asnumpy().ravel()
            pred = pred.asnumpy()
            if label.shape[0] != pred.shape[0]:
                raise ValueError("CrossEntropy: %d labels but %d predictions"
                                 % (label.shape[0], pred.shape[0]))
            prob = pred[numpy.arange(label.shape[0]), numpy.int64(label)]
            cross_entropy = float((-numpy.log(prob + self.eps)).sum())
            self._add(cross_entropy, label.shape[0])


def _regression_pair(label, pred):
    label = label.asnumpy()
    pred = pred.asnumpy()
    if len(label.shape) == 1:
        label = label.reshape(label.shape[0], 1)
    if len(pred.shape) == 1:
        pred = pred.reshape(pred.shape[0], 1)
    return label, pred


@register
class MAE(EvalMetric):
    """Mean absolute error (per batch mean, averaged over batches)."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super(MAE, self).__init__(name, output_names=output_names, label_names=label_names,
                                  has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _regression_pair(label, pred)
            self._add(float(numpy.abs(label - pred).mean()), 1)


@register
class MSE(EvalMetric):
    """Mean squared error (per batch mean, averaged over batches)."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super(MSE, self).__init__(name, output_names=output_names, label_names=label_names,
                                  has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _regression_pair(label, pred)
            self._add(float(((label - pred) ** 2.0).mean()), 1)


@register
class RMSE(EvalMetric):
    """Root mean squared error (per batch, averaged over batches)."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super(RMSE, self).__init__(name, output_names=output_names, label_names=label_names,
                                   has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _regression_pair(label, pred)
            self._add(math.sqrt(float(((label - pred) ** 2.0).mean())), 1)


@register
class Loss(EvalMetric):
    """Mean of the outputs themselves (a loss the network computes); labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super(Loss, self).__init__(name, output_names=output_names, label_names=label_names,
                                   has_global_stats=True)

    def update(self, _, preds):
        if isinstance(preds, ndarray.NDArray):
            preds = [preds]
        for pred in preds:
            self._add(float(pred.asnumpy().sum()), pred.size)


@register
class CustomMetric(EvalMetric):
    """A metric from feval(label, pred) on numpy arrays, returning a value or (sum, count)."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if name.find("<") != -1:
                name = "custom(%s)" % name
        super(CustomMetric, self).__init__(name, feval=feval,
                                           allow_extra_outputs=allow_extra_outputs,
                                           output_names=output_names, label_names=label_names,
                                           has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval = self._feval(label.asnumpy(), pred.asnumpy())
            if isinstance(reval, tuple):
                sum_metric, num_inst = reval
                self._add(sum_metric, num_inst)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from a function of numpy (label, pred)."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
