"""Activation layers (MXNet 1.x's gluon.nn.activations).

Each is a HybridBlock over one operator (Activation, LeakyReLU, sigmoid); PReLU holds its
negative slope `alpha` as a Parameter (one value, or one per channel of axis 1).
"""
from ... import initializer
from ..block import HybridBlock

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]

class Activation(HybridBlock):
    """Applies the activation function named `activation`: 'relu', 'sigmoid', 'tanh',
    'softrelu' or 'softsign' (the Activation operator's act_type, checked when it runs). Its
    name hint is the function's name (relu0_, ...)."""

    def __init__(self, activation, **kwargs):
        if not isinstance(activation, str):
            raise TypeError("Activation: activation must be a string naming the function, "
                            "got %s" % type(activation).__name__)
        self._act_type = activation
        super(Activation, self).__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self):
        return "{name}({act})".format(name=self.__class__.__name__, act=self._act_type)


class LeakyReLU(HybridBlock):
    """x for x >= 0, alpha * x below (alpha >= 0)."""

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise AssertionError("Slope coefficient for LeakyReLU must be no less than 0.")
        super(LeakyReLU, self).__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self):
        return "{name}({alpha})".format(name=self.__class__.__name__, alpha=self._alpha)


class PReLU(HybridBlock):
    """Leaky ReLU whose slope is learned: the Parameter `alpha` of shape (in_channels,), one
    slope for everything (1, the default) or one per channel of axis 1; initialized to 0.25
    by default."""

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels=1, **kwargs):
        super(PReLU, self).__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """Exponential linear unit: x for x > 0, alpha * (exp(x) - 1) below (Clevert et al.)."""

    def __init__(self, alpha=1.0, **kwargs):
        super(ELU, self).__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled exponential linear unit (Klambauer et al.), with its fixed constants."""

    def __init__(self, **kwargs):
        super(SELU, self).__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit, x * Phi(x) (Hendrycks and Gimpel)."""

    def __init__(self, **kwargs):
        super(GELU, self).__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """x * sigmoid(beta * x) (Ramachandran et al.)."""

    def __init__(self, beta=1.0, **kwargs):
        super(Swish, self).__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name="fwd")
