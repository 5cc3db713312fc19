"""HybridConcurrent and Identity, the two gluon.contrib.nn blocks MXNet's model zoo builds
with (SqueezeNet's fire modules, DenseNet's dense layers, Inception's branches). They are
defined here because nanomx has no gluon.contrib.nn yet; the class names (and so the name
hints, hybridconcurrent0_ / identity0_) are MXNet's."""
from ...nn import HybridSequential
from ...block import HybridBlock

__all__ = ["HybridConcurrent", "Identity"]


class HybridConcurrent(HybridSequential):
    """Runs every child on the same input and concatenates their outputs along `axis`."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super(HybridConcurrent, self).__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        outputs = [block(x) for block in self._children.values()]
        return F.concat(*outputs, dim=self.axis)


class Identity(HybridBlock):
    """Returns its input (the shortcut branch of a HybridConcurrent)."""

    def hybrid_forward(self, F, x):
        return x
