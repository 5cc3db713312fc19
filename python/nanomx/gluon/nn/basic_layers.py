"""Basic layers (MXNet 1.x's gluon.nn.basic_layers): containers, Dense, Dropout, the
normalization layers, Embedding, Flatten and the Lambda wrappers.

Parameter names, shapes, defaults and name hints are MXNet 1.9.1's, so that parameter files
saved by MXNet load by name. A dimension given as 0 (in_units, in_channels) is inferred from
the first input (deferred initialization). Each hybrid_forward calls one nanomx operator with
name='fwd', so that hybridized graphs carry MXNet's node names (dense0_fwd, ...).
"""
import warnings

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from ..block import Block, HybridBlock
from ..utils import _indent
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding",
           "BatchNorm", "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm",
           "Flatten", "Lambda", "HybridLambda"]


def _children_repr(block):
    lines = ["  ({key}): {child}".format(key=key, child=_indent(child.__repr__(), 2))
             for key, child in block._children.items()]
    return "{name}(\n{body}\n)".format(name=block.__class__.__name__, body="\n".join(lines))


def _slice_children(block, key):
    """block[key]: one child for an int, a new container of the same type (sharing the
    children, and the prefix) for a slice."""
    children = list(block._children.values())[key]
    if not isinstance(children, list):
        return children
    net = type(block)(prefix=block._prefix)
    with net.name_scope():
        net.add(*children)
    return net


class Sequential(Block):
    """Runs its children in the order they were added, each on the previous one's output.

    Create the children inside `with net.name_scope():` to give them names under the
    container's prefix."""

    def __init__(self, prefix=None, params=None):
        super(Sequential, self).__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Appends blocks."""
        for block in blocks:
            if not isinstance(block, Block):
                raise TypeError("%s.add: expected a Block, got %s"
                                % (type(self).__name__, type(block).__name__))
            self.register_child(block)

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x

    def __repr__(self):
        return _children_repr(self)

    def __getitem__(self, key):
        return _slice_children(self, key)

    def __len__(self):
        return len(self._children)

    def hybridize(self, active=True, **kwargs):
        """Hybridizes the HybridBlock children (a Sequential itself runs imperatively)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(
                "All children of this Sequential layer '%s' are HybridBlocks. Consider "
                "using HybridSequential for the best performance." % self.prefix,
                stacklevel=2)
        super(Sequential, self).hybridize(active, **kwargs)


class HybridSequential(HybridBlock):
    """Sequential for HybridBlocks: hybridizes as one graph."""

    def __init__(self, prefix=None, params=None):
        super(HybridSequential, self).__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Appends blocks (HybridBlocks)."""
        for block in blocks:
            if not isinstance(block, Block):
                raise TypeError("%s.add: expected a HybridBlock, got %s"
                                % (type(self).__name__, type(block).__name__))
            self.register_child(block)

    def hybrid_forward(self, F, x):
        for block in self._children.values():
            x = block(x)
        return x

    def __repr__(self):
        return _children_repr(self)

    def __getitem__(self, key):
        return _slice_children(self, key)

    def __len__(self):
        return len(self._children)


class Dense(HybridBlock):
    """Fully connected layer: activation(dot(x, weight.T) + bias).

    units: output size. activation: an Activation name or None. use_bias: add `bias`.
    flatten: True collapses all axes but the first of the input (N, in_units...); False
        applies the layer to the last axis and keeps the others.
    dtype: the parameters' dtype. weight_initializer / bias_initializer ('zeros').
    in_units: input size; 0 infers it from the first input.
    Parameters: weight (units, in_units), bias (units,).
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True,
                 dtype="float32", weight_initializer=None, bias_initializer="zeros",
                 in_units=0, **kwargs):
        super(Dense, self).__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError("Dense: units must be positive, got %r" % (units,))
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                            dtype=dtype, allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        # The bias goes only when there is one: nanomx's operator functions take no None
        # for an optional input.
        inputs = (x, weight) if bias is None else (x, weight, bias)
        out = F.FullyConnected(*inputs, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        return "{name}({inp} -> {out}, {act})".format(
            name=self.__class__.__name__, inp=shape[1] if shape[1] else None, out=shape[0],
            act=self.act if self.act else "linear")


class Dropout(HybridBlock):
    """Zeroes a fraction `rate` of the input in training (scaling the rest by
    1 / (1 - rate)); the identity in inference. axes: axes along which one mask is shared."""

    def __init__(self, rate, axes=(), **kwargs):
        super(Dropout, self).__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError("Dropout: rate must be in [0, 1], got %r" % (rate,))
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return "{name}(p = {rate}, axes={axes})".format(name=self.__class__.__name__,
                                                       rate=self._rate, axes=self._axes)


class _BatchNorm(HybridBlock):
    """The BatchNorm layers' shared body: parameters gamma, beta (learned) and running_mean,
    running_var (grad_req 'null'; the operator's auxiliary states, updated in training)."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, fuse_relu=False,
                 beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super(_BatchNorm, self).__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        self.fuse_relu = fuse_relu
        if in_channels != 0:
            self.in_channels = in_channels
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                     shape=(in_channels,), init=gamma_initializer,
                                     allow_deferred_init=True, differentiable=scale)
        self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                    shape=(in_channels,), init=beta_initializer,
                                    allow_deferred_init=True, differentiable=center)
        self.running_mean = self.params.get("running_mean", grad_req="null",
                                            shape=(in_channels,),
                                            init=running_mean_initializer,
                                            allow_deferred_init=True, differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null",
                                           shape=(in_channels,),
                                           init=running_variance_initializer,
                                           allow_deferred_init=True, differentiable=False)

    def cast(self, dtype):
        # The statistics stay float32 under float16, as in MXNet.
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super(_BatchNorm, self).cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        out = F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                          **self._kwargs)
        if self.fuse_relu:
            out = F.Activation(out, act_type="relu")
        return out

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        content = ", ".join("%s=%r" % (k, v) for k, v in self._kwargs.items())
        return "{name}({content}, in_channels={c})".format(
            name=self.__class__.__name__, content=content, c=in_channels if in_channels else None)


class BatchNorm(_BatchNorm):
    """Batch normalization (Ioffe and Szegedy) over axis `axis` (1, the channels of NCHW).

    In training (autograd.record(train_mode=True)) it normalizes with the batch's statistics
    and updates running_mean / running_var with `momentum`; in inference it uses the running
    statistics (always, with use_global_stats). scale=False fixes gamma at 1 and center=False
    beta at 0. in_channels: 0 infers it from the first input.
    Parameters: gamma, beta, running_mean, running_var, each (in_channels,).
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super(BatchNorm, self).__init__(
            axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
            use_global_stats=use_global_stats, fuse_relu=False,
            beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels, **kwargs)


class BatchNormReLU(_BatchNorm):
    """BatchNorm followed by ReLU (MXNet fuses them into one operator; nanomx runs
    BatchNorm then Activation). Same parameters as BatchNorm."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super(BatchNormReLU, self).__init__(
            axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
            use_global_stats=use_global_stats, fuse_relu=True,
            beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels, **kwargs)


class Embedding(HybridBlock):
    """Maps integer indices in [0, input_dim) to rows of the weight (input_dim, output_dim):
    input (d1, ..., dk) -> output (d1, ..., dk, output_dim).

    sparse_grad=True asks for a row_sparse gradient, which nanomx does not have: the
    gradient stays dense (the same values), with a warning."""

    def __init__(self, input_dim, output_dim, dtype="float32",
                 weight_initializer=None, sparse_grad=False, **kwargs):
        super(Embedding, self).__init__(**kwargs)
        if sparse_grad:
            warnings.warn("Embedding(sparse_grad=True): nanomx has no row_sparse gradients; "
                          "the weight's gradient is dense", stacklevel=2)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim,
                        "dtype": dtype, "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", input_dim=self._kwargs["input_dim"],
                           output_dim=self._kwargs["output_dim"],
                           dtype=self._kwargs["dtype"])

    def __repr__(self):
        return "{block_name}({input_dim} -> {output_dim}, {dtype})".format(
            block_name=self.__class__.__name__, **self._kwargs)


class Flatten(HybridBlock):
    """(N, d1, ..., dk) -> (N, d1 * ... * dk)."""

    def __init__(self, **kwargs):
        super(Flatten, self).__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class InstanceNorm(HybridBlock):
    """Instance normalization (Ulyanov et al.): each sample's each channel (axis `axis`)
    normalized over its remaining axes, then scaled by gamma and shifted by beta.

    scale defaults to False (gamma gets no gradient), center to True.
    Parameters: gamma, beta, each (in_channels,); 0 infers it from the first input."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer="zeros", gamma_initializer="ones",
                 in_channels=0, **kwargs):
        super(InstanceNorm, self).__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                     shape=(in_channels,), init=gamma_initializer,
                                     allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                    shape=(in_channels,), init=beta_initializer,
                                    allow_deferred_init=True)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = F.swapaxes(x, dim1=1, dim2=self._axis)
        out = F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        return F.swapaxes(out, dim1=1, dim2=self._axis)

    def __repr__(self):
        content = ", ".join("%s=%r" % (k, v) for k, v in self._kwargs.items())
        return "{name}({content}, in_channels={c})".format(
            name=self.__class__.__name__, content=content, c=self.gamma.shape[0])


class LayerNorm(HybridBlock):
    """Layer normalization (Ba et al.) over axis `axis` (-1), then gamma * x + beta.

    Parameters: gamma, beta, each (in_channels,); 0 infers it from the first input."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 in_channels=0, prefix=None, params=None):
        super(LayerNorm, self).__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                     shape=(in_channels,), init=gamma_initializer,
                                     allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                    shape=(in_channels,), init=beta_initializer,
                                    allow_deferred_init=True)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self):
        content = ", ".join("%s=%r" % (k, v) for k, v in self._kwargs.items())
        return "{name}({content}, in_channels={c})".format(
            name=self.__class__.__name__, content=content, c=self.gamma.shape[0])


class GroupNorm(HybridBlock):
    """Group normalization (Wu and He): the channels of (N, C, ...) split into num_groups
    groups, each normalized over its channels and the remaining axes.

    Parameters: gamma, beta, each (num_groups,) as in MXNet 1.9.1 (one scale and shift per
    group)."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 prefix=None, params=None):
        super(GroupNorm, self).__init__(prefix=prefix, params=params)
        if int(num_groups) <= 0:
            raise ValueError("GroupNorm: num_groups must be positive, got %r" % (num_groups,))
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                     shape=(num_groups,), init=gamma_initializer,
                                     allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                    shape=(num_groups,), init=beta_initializer,
                                    allow_deferred_init=True)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups,
                           eps=self._epsilon)

    def __repr__(self):
        content = ", ".join("%s=%r" % (k, v) for k, v in self._kwargs.items())
        return "{name}({content})".format(name=self.__class__.__name__, content=content)


class Lambda(Block):
    """Wraps a function as a Block: the name of an mx.nd function ('tanh') or a callable
    taking the inputs (lambda x: nd.LeakyReLU(x, slope=0.1))."""

    def __init__(self, function, prefix=None):
        super(Lambda, self).__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise AssertionError("Function name %s is not found in ndarray." % function)
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError("Unrecognized function in lambda: {} of type {}"
                             .format(function, type(function)))

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return "{name}({function})".format(name=self.__class__.__name__,
                                           function=getattr(self._func_impl, "__name__",
                                                            repr(self._func_impl)))


class HybridLambda(HybridBlock):
    """Wraps a function as a HybridBlock: the name of a function both mx.nd and mx.sym have
    ('tanh'), or a callable taking F first (lambda F, x: F.LeakyReLU(x, slope=0.1))."""

    def __init__(self, function, prefix=None):
        super(HybridLambda, self).__init__(prefix=prefix)
        if isinstance(function, str):
            if not (hasattr(nd, function) and hasattr(sym, function)):
                raise AssertionError("Function name %s is not found in symbol/ndarray."
                                     % function)
            by_module = {nd: getattr(nd, function), sym: getattr(sym, function)}
            self._func = lambda F, *args: by_module[F](*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = getattr(function, "__name__", repr(function))
        else:
            raise ValueError("Unrecognized function in lambda: {} of type {}"
                             .format(function, type(function)))

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return "{name}({function})".format(name=self.__class__.__name__,
                                           function=self._func_name)
