"""mx.init / mx.initializer: MXNet 1.x's parameter initializers.

An initializer is called as ``init(InitDesc(name, attrs), array)`` and picks what to do from
the variable's ``__init__`` attribute (a JSON initializer set with ``Variable(init=...)``) or
else from the name's suffix: ``weight`` gets the initializer's own rule, ``bias``/``beta``
zero, ``gamma`` one (docs/symbolic.md). Random draws go through ``mx.nd.random`` (the
``_random_uniform``/``_random_normal`` operators), so ``mx.random.seed`` makes them repeatable.
"""
import json
import logging
import re
import warnings

import numpy as np

from . import ndarray as nd
from ._registry import alias_decorator as _alias_decorator
from .ndarray import NDArray

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero",
           "One", "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu",
           "Bilinear", "LSTMBias"]

_REGISTRY = {}


def register(klass):
    """Registers an Initializer subclass under its lower-case class name."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError("register: %r is not a subclass of mx.init.Initializer" % (klass,))
    name = klass.__name__.lower()
    if name in _REGISTRY and _REGISTRY[name] is not klass:
        warnings.warn("New initializer %s.%s is overriding existing initializer %s.%s"
                      % (klass.__module__, klass.__name__, _REGISTRY[name].__module__,
                         _REGISTRY[name].__name__), UserWarning, stacklevel=2)
    _REGISTRY[name] = klass
    return klass


def alias(*aliases):
    """Registers further (lower-case) names for an initializer class."""
    return _alias_decorator(_REGISTRY, aliases)


def create(initializer, *args, **kwargs):
    """An initializer from an instance (returned as is), a registered name ('xavier', 'zeros',
    ...) with constructor arguments, or the JSON text ``dumps()`` writes."""
    if isinstance(initializer, Initializer):
        if args or kwargs:
            raise ValueError("create: %s is already an initializer; extra arguments %r %r"
                             % (initializer.__class__.__name__, args, kwargs))
        return initializer
    if not isinstance(initializer, str):
        raise TypeError("create: expected an Initializer, a name or a JSON string, got %s"
                        % type(initializer).__name__)
    text = initializer.strip()
    if text.startswith("["):
        if args or kwargs:
            raise ValueError("create: a JSON initializer takes no further arguments")
        try:
            name, kw = json.loads(text)
        except (ValueError, TypeError):
            raise ValueError("create: %r is not an initializer's JSON ([name, {kwargs}])"
                             % initializer) from None
        return create(name, **kw)
    name = text.lower()
    if name not in _REGISTRY:
        raise ValueError("Cannot find initializer %s. Must be one of %s"
                         % (initializer, ", ".join(sorted(_REGISTRY))))
    return _REGISTRY[name](*args, **kwargs)


class InitDesc(str):
    """A parameter's name (a str) carrying its variable's attribute dict and the global
    initializer."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super(InitDesc, cls).__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer(object):
    """The base initializer: dispatches on the InitDesc (see the module docstring)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """With verbose, logs each initialized array's name and print_func(array) (default:
        its norm divided by sqrt(size))."""
        self._verbose = verbose
        if print_func is None:
            def asum_stat(x):
                return str((nd.norm(x) / np.sqrt(x.size)).asscalar())
            print_func = asum_stat
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """``json.dumps([lower-case class name, constructor kwargs])``, what create() reads."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if not isinstance(arr, NDArray):
            raise TypeError("initializer: arr must be an NDArray, got %s" % type(arr).__name__)
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            # The variable's own initializer (Variable(init=...)) wins, whatever the name.
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        if desc.endswith("weight"):
            self._init_weight(desc, arr)
            self._verbose_print(desc, "weight", arr)
        elif desc.endswith("bias"):
            self._init_bias(desc, arr)
            self._verbose_print(desc, "bias", arr)
        elif desc.endswith("gamma"):
            self._init_gamma(desc, arr)
            self._verbose_print(desc, "gamma", arr)
        elif desc.endswith("beta"):
            self._init_beta(desc, arr)
            self._verbose_print(desc, "beta", arr)
        elif desc.endswith("min"):
            self._init_zero(desc, arr)
        elif desc.endswith("max"):
            self._init_one(desc, arr)
        elif desc.endswith("weight_quantize"):
            self._init_quantized_weight(desc, arr)
        elif desc.endswith("bias_quantize"):
            self._init_quantized_bias(desc, arr)
        else:
            self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        warnings.warn("\033[91mCalling initializer with init(str, NDArray) has been deprecated."
                      "please use init(mx.init.InitDesc(...), NDArray) instead.\033[0m",
                      DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError("name must be string")
        if not isinstance(arr, NDArray):
            raise TypeError("arr must be NDArray")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        elif name.endswith("bias"):
            self._init_bias(name, arr)
        elif name.endswith("gamma"):
            self._init_gamma(name, arr)
        elif name.endswith("beta"):
            self._init_beta(name, arr)
        elif name.endswith("weight"):
            self._init_weight(name, arr)
        elif name.endswith("moving_mean"):
            self._init_zero(name, arr)
        elif name.endswith("moving_var"):
            self._init_one(name, arr)
        elif name.endswith("moving_inv_var"):
            self._init_zero(name, arr)
        elif name.endswith("moving_avg"):
            self._init_zero(name, arr)
        elif name.endswith("min"):
            self._init_zero(name, arr)
        elif name.endswith("max"):
            self._init_one(name, arr)
        else:
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        weight = np.zeros(int(np.prod(arr.shape)), dtype="float32")
        shape = arr.shape
        f = np.ceil(shape[3] / 2.)
        c = (2 * f - 1 - f % 2) / (2. * f)
        for i in range(int(np.prod(shape))):
            x = i % shape[3]
            y = (i // shape[3]) % shape[2]
            weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
        arr[:] = weight.reshape(shape)

    def _init_loc_bias(self, _, arr):
        if arr.shape[0] != 6:
            raise ValueError("stn_loc bias must have 6 elements, got shape %s" % (arr.shape,))
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        raise NotImplementedError("%s must override _init_weight (initializing %s)"
                                  % (self.__class__.__name__, name))

    def _init_quantized_weight(self, _, arr):
        arr[:] = np.random.randint(-127, 127, size=arr.shape).astype(np.int8)

    def _init_default(self, name, _):
        raise ValueError(
            'Unknown initialization pattern for %s. '
            'Default initialization is now limited to '
            '"weight", "bias", "gamma" (1.0), and "beta" (0.0).'
            'Please use mx.sym.Variable(init=mx.init.*) to set initialization pattern' % name)

    def __repr__(self):
        return "%s(%s)" % (self.__class__.__name__,
                           ", ".join("%s=%r" % kv for kv in sorted(self._kwargs.items())))


class Load(object):
    """Initializes from a dict of arrays (or a file mx.nd.save wrote); 'arg:'/'aux:' prefixes
    are dropped. Names it lacks go to default_init (an error without one)."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = nd.load(param)
        if not isinstance(param, dict):
            raise TypeError("Load: param must be a dict of NDArrays or a file name")
        self.param = {}
        for name, arr in param.items():
            if name.startswith("arg:") or name.startswith("aux:"):
                self.param[name[4:]] = arr
            else:
                self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            if arr.shape != self.param[name].shape:
                raise ValueError("Parameter %s cannot be initialized from loading. Shape mismatch,"
                                 " target %s vs loaded %s"
                                 % (name, arr.shape, self.param[name].shape))
            arr[:] = self.param[name]
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise ValueError("Cannot Initialize %s. Not found in loaded param and no default "
                                 "Initializer is provided." % name)
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed(object):
    """Initializes each parameter with the initializer of the first regex (re.match) its name
    matches."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError("Mixed: %d patterns but %d initializers"
                             % (len(patterns), len(initializers)))
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError("Parameter name %s did not match any pattern. Consider adding a "
                         '".*" pattern at the and with default Initializer.' % name)


@register
@alias("zeros")
class Zero(Initializer):
    """Weights 0 (biases 0, gammas 1 as always)."""

    def __init__(self):
        super(Zero, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Weights 1 (biases still 0)."""

    def __init__(self):
        super(One, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Weights set to `value` (a number or an array broadcastable to the weight)."""

    def __init__(self, value):
        super(Constant, self).__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value

    def dumps(self):
        value = self.value
        if isinstance(value, NDArray):
            value = value.asnumpy()
        if isinstance(value, np.ndarray):
            value = value.tolist()
        return json.dumps([self.__class__.__name__.lower(), {"value": value}])


@register
class Uniform(Initializer):
    """Weights drawn from U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super(Uniform, self).__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        nd.random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Weights drawn from N(0, sigma^2)."""

    def __init__(self, sigma=0.01):
        super(Normal, self).__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        nd.random.normal(0, self.sigma, out=arr)


@register
class Orthogonal(Initializer):
    """An orthogonal matrix (from the SVD of a random one) times `scale`."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super(Orthogonal, self).__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = np.random.uniform(-1.0, 1.0, (nout, nin))
        elif self.rand_type == "normal":
            tmp = np.random.normal(0.0, 1.0, (nout, nin))
        else:
            raise ValueError("Orthogonal: unknown rand_type %r (uniform or normal)"
                             % self.rand_type)
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * res.reshape(arr.shape)).astype(np.float32)


@register
class Xavier(Initializer):
    """Glorot: scale = sqrt(magnitude / factor) with factor the average of fan-in and fan-out
    (``factor_type='avg'``), fan-in ('in') or fan-out ('out'); weights from U(-scale, scale)
    (``rnd_type='uniform'``) or N(0, scale^2) ('gaussian'). Fans count the receptive field
    (every axis after the second) for convolutions."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super(Xavier, self).__init__(rnd_type=rnd_type, factor_type=factor_type,
                                     magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        hw_scale = 1.
        if len(shape) < 2:
            raise ValueError("Xavier initializer cannot be applied to vector {0}. It requires at"
                             " least 2D.".format(name))
        if len(shape) > 2:
            hw_scale = np.prod(shape[2:])
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        elif self.factor_type == "out":
            factor = fan_out
        else:
            raise ValueError("Incorrect factor type")
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            nd.random.uniform(-scale, scale, out=arr)
        elif self.rnd_type == "gaussian":
            nd.random.normal(0, scale, out=arr)
        else:
            raise ValueError("Unknown random type")


@register
class MSRAPrelu(Xavier):
    """He et al.: Xavier('gaussian', factor_type, 2 / (1 + slope^2))."""

    def __init__(self, factor_type="avg", slope=0.25):
        magnitude = 2. / (1 + slope ** 2)
        super(MSRAPrelu, self).__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Bilinear upsampling weights (deconvolution)."""

    def __init__(self):
        super(Bilinear, self).__init__()

    def _init_weight(self, name, arr):
        self._init_bilinear(name, arr)


@register
class LSTMBias(Initializer):
    """LSTM biases 0 except the forget gate's (the second quarter), set to forget_bias."""

    def __init__(self, forget_bias=1.0):
        super(LSTMBias, self).__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        arr[:] = 0.0
        num_hidden = int(arr.shape[0] / 4)
        arr[num_hidden:2 * num_hidden] = self.forget_bias
