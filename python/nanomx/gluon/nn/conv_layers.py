"""Convolution, transposed convolution, pooling and padding layers (MXNet 1.x's
gluon.nn.conv_layers).

Parameter names and shapes are MXNet 1.9.1's: a convolution's weight is
(channels, in_channels / groups, *kernel) in channel-first layouts and
(channels, *kernel, in_channels / groups) in channel-last ones; a transposed convolution's is
(in_channels, channels / groups, *kernel); bias (channels,). in_channels=0 infers the input
channels from the first input. The layers call Convolution, Deconvolution, Pooling and pad
with name='fwd'.
"""
import numbers

from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D",
           "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]

_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _tuple(value, ndim, what):
    """An int repeated ndim times, or a sequence of ndim ints."""
    if _is_int(value):
        return (int(value),) * ndim
    try:
        value = tuple(value)
    except TypeError:
        raise TypeError("%s must be an int or a tuple/list of %d ints, got %r"
                        % (what, ndim, value)) from None
    if len(value) != ndim or not all(_is_int(v) for v in value):
        raise AssertionError("%s must be a number or a list of %d ints" % (what, ndim))
    return tuple(int(v) for v in value)


def _check_layout(layout, ndim):
    """Pooling layouts: channel-first or channel-last for the number of spatial axes."""
    if layout not in _LAYOUTS[ndim]:
        raise AssertionError("Only %s layouts are valid for %dD Pooling"
                             % (" and ".join(_LAYOUTS[ndim]), ndim))


def _weight_shape(transposed, layout, channels, in_channels, groups, kernel):
    """MXNet's weight shape: the (out, in) pair in layout order, with the kernel in place of
    the spatial axes (0 where in_channels is not known yet)."""
    if transposed:
        first, second = in_channels, channels // groups
    else:
        first, second = channels, in_channels // groups
    if layout.find("C") == 1:
        return (first, second) + tuple(kernel)
    return (first,) + tuple(kernel) + (second,)


class _Conv(HybridBlock):
    """The convolution layers' shared body (see the module docstring for the parameters)."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", op_name="Convolution", adj=None, prefix=None,
                 params=None):
        super(_Conv, self).__init__(prefix=prefix, params=params)
        ndim = len(kernel_size)
        if not _is_int(channels) or channels <= 0:
            raise ValueError("channels must be a positive int, got %r" % (channels,))
        if not _is_int(groups) or groups <= 0:
            raise ValueError("groups must be a positive int, got %r" % (groups,))
        if channels % groups:
            raise ValueError("channels (%d) must be a multiple of groups (%d)"
                             % (channels, groups))
        if in_channels and in_channels % groups:
            raise ValueError("in_channels (%d) must be a multiple of groups (%d)"
                             % (in_channels, groups))
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            strides = _tuple(strides, ndim, "strides")
            padding = _tuple(padding, ndim, "padding")
            dilation = _tuple(dilation, ndim, "dilation")
            self._op_name = op_name
            self._kwargs = {
                "kernel": kernel_size, "stride": strides, "dilate": dilation,
                "pad": padding, "num_filter": channels, "num_group": groups,
                "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            wshape = _weight_shape(op_name == "Deconvolution", layout, channels, in_channels,
                                   groups, kernel_size)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name="fwd", **self._kwargs)
        else:
            out = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def _alias(self):
        return "conv"

    def __repr__(self):
        kw = self._kwargs
        ndim = len(kw["kernel"])
        s = "{name}({mapping}, kernel_size={kernel}, stride={stride}"
        if kw["pad"] != (0,) * ndim:
            s += ", padding={pad}"
        if kw["dilate"] != (1,) * ndim:
            s += ", dilation={dilate}"
        out_pad = getattr(self, "outpad", None)
        if out_pad is not None and tuple(out_pad) != (0,) * ndim:
            s += ", output_padding=%s" % (tuple(out_pad),)
        if kw["num_group"] != 1:
            s += ", groups={num_group}"
        if self.bias is None:
            s += ", bias=False"
        if self.act:
            s += ", {}".format(self.act)
        s += ")"
        shape = self.weight.shape
        return s.format(name=self.__class__.__name__,
                        mapping="{0} -> {1}".format(shape[1] if shape[1] else None, shape[0]),
                        **kw)


def _conv_init(layer, ndim, channels, kernel_size, strides, padding, dilation, groups,
               layout, activation, use_bias, weight_initializer, bias_initializer,
               in_channels, kwargs, output_padding=None):
    """What every ConvND / ConvNDTranspose constructor does after its own signature."""
    allowed = ("NCW",) if ndim == 1 else _LAYOUTS[ndim]
    if layout not in allowed:
        raise AssertionError("Only supports %s layout for now"
                             % " and ".join("'%s'" % a for a in allowed))
    kernel_size = _tuple(kernel_size, ndim, "kernel_size")
    transposed = output_padding is not None
    op_name = kwargs.pop("op_name", "Deconvolution" if transposed else "Convolution")
    adj = _tuple(output_padding, ndim, "output_padding") if transposed else None
    _Conv.__init__(layer, channels, kernel_size, strides, padding, dilation, groups, layout,
                   in_channels, activation, use_bias, weight_initializer, bias_initializer,
                   op_name=op_name, adj=adj, **kwargs)
    if transposed:
        layer.outpad = adj


class Conv1D(_Conv):
    """1D convolution over (N, C, W) (layout 'NCW').

    channels: output channels. kernel_size, strides, padding, dilation: an int or 1 int.
    groups: independent channel groups. activation: an Activation name or None. use_bias:
    add a bias. in_channels: 0 infers it from the first input.
    Output width: floor((W + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1,
                 groups=1, layout="NCW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        _conv_init(self, 1, channels, kernel_size, strides, padding, dilation, groups, layout,
                   activation, use_bias, weight_initializer, bias_initializer, in_channels,
                   kwargs)


class Conv2D(_Conv):
    """2D convolution over (N, C, H, W) ('NCHW') or (N, H, W, C) ('NHWC'); the arguments
    are Conv1D's with 2 ints per tuple."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _conv_init(self, 2, channels, kernel_size, strides, padding, dilation, groups, layout,
                   activation, use_bias, weight_initializer, bias_initializer, in_channels,
                   kwargs)


class Conv3D(_Conv):
    """3D convolution over (N, C, D, H, W) ('NCDHW') or (N, D, H, W, C) ('NDHWC'); the
    arguments are Conv1D's with 3 ints per tuple."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _conv_init(self, 3, channels, kernel_size, strides, padding, dilation, groups, layout,
                   activation, use_bias, weight_initializer, bias_initializer, in_channels,
                   kwargs)


class Conv1DTranspose(_Conv):
    """1D transposed convolution (the gradient of a convolution) over (N, C, W).

    output_padding: extra size on one side of the output, so that
    out = (W - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1 + output_padding.
    Weight: (in_channels, channels / groups, kernel)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout="NCW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        _conv_init(self, 1, channels, kernel_size, strides, padding, dilation, groups, layout,
                   activation, use_bias, weight_initializer, bias_initializer, in_channels,
                   kwargs, output_padding)


class Conv2DTranspose(_Conv):
    """2D transposed convolution over 'NCHW' or 'NHWC' (see Conv1DTranspose)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _conv_init(self, 2, channels, kernel_size, strides, padding, dilation, groups, layout,
                   activation, use_bias, weight_initializer, bias_initializer, in_channels,
                   kwargs, output_padding)


class Conv3DTranspose(_Conv):
    """3D transposed convolution over 'NCDHW' or 'NDHWC' (see Conv1DTranspose)."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _conv_init(self, 3, channels, kernel_size, strides, padding, dilation, groups, layout,
                   activation, use_bias, weight_initializer, bias_initializer, in_channels,
                   kwargs, output_padding)


class _Pooling(HybridBlock):
    """The pooling layers' shared body: the Pooling operator with MXNet's arguments
    (pooling_convention 'full' for ceil_mode)."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        super(_Pooling, self).__init__(**kwargs)
        ndim = len(pool_size)
        if strides is None:
            strides = pool_size
        strides = _tuple(strides, ndim, "strides")
        padding = _tuple(padding, ndim, "padding")
        self._kwargs = {
            "kernel": pool_size, "stride": strides, "pad": padding,
            "global_pool": global_pool, "pool_type": pool_type, "layout": layout,
            "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        s = "{name}(size={kernel}, stride={stride}, padding={pad}, ceil_mode={ceil_mode}"
        s += ", global_pool={global_pool}, pool_type={pool_type}, layout={layout})"
        return s.format(name=self.__class__.__name__,
                        ceil_mode=self._kwargs["pooling_convention"] == "full",
                        **self._kwargs)


def _pool_init(layer, ndim, pool_type, pool_size, strides, padding, ceil_mode, layout,
               count_include_pad, kwargs):
    _check_layout(layout, ndim)
    pool_size = _tuple(pool_size, ndim, "pool_size")
    _Pooling.__init__(layer, pool_size, strides, padding, ceil_mode, False, pool_type,
                      layout, count_include_pad, **kwargs)


class MaxPool1D(_Pooling):
    """1D max pooling over 'NCW' or 'NWC'. pool_size, strides (default: pool_size),
    padding: an int or 1 int; ceil_mode rounds the output size up instead of down."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW",
                 ceil_mode=False, **kwargs):
        _pool_init(self, 1, "max", pool_size, strides, padding, ceil_mode, layout, None,
                   kwargs)


class MaxPool2D(_Pooling):
    """2D max pooling over 'NCHW' or 'NHWC' (arguments as MaxPool1D's, 2 ints each)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):
        _pool_init(self, 2, "max", pool_size, strides, padding, ceil_mode, layout, None,
                   kwargs)


class MaxPool3D(_Pooling):
    """3D max pooling over 'NCDHW' or 'NDHWC' (arguments as MaxPool1D's, 3 ints each)."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0,
                 ceil_mode=False, layout="NCDHW", **kwargs):
        _pool_init(self, 3, "max", pool_size, strides, padding, ceil_mode, layout, None,
                   kwargs)


class AvgPool1D(_Pooling):
    """1D average pooling over 'NCW' or 'NWC' (arguments as MaxPool1D's);
    count_include_pad counts the padded elements in each average."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW",
                 ceil_mode=False, count_include_pad=True, **kwargs):
        _pool_init(self, 1, "avg", pool_size, strides, padding, ceil_mode, layout,
                   count_include_pad, kwargs)


class AvgPool2D(_Pooling):
    """2D average pooling over 'NCHW' or 'NHWC' (see AvgPool1D)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0,
                 ceil_mode=False, layout="NCHW", count_include_pad=True, **kwargs):
        _pool_init(self, 2, "avg", pool_size, strides, padding, ceil_mode, layout,
                   count_include_pad, kwargs)


class AvgPool3D(_Pooling):
    """3D average pooling over 'NCDHW' or 'NDHWC' (see AvgPool1D)."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0,
                 ceil_mode=False, layout="NCDHW", count_include_pad=True, **kwargs):
        _pool_init(self, 3, "avg", pool_size, strides, padding, ceil_mode, layout,
                   count_include_pad, kwargs)


def _global_init(layer, ndim, pool_type, layout, kwargs):
    _check_layout(layout, ndim)
    _Pooling.__init__(layer, (1,) * ndim, None, 0, True, True, pool_type, layout, **kwargs)


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: (N, C, W) -> (N, C, 1)."""

    def __init__(self, layout="NCW", **kwargs):
        _global_init(self, 1, "max", layout, kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over each channel's whole plane: (N, C, H, W) -> (N, C, 1, 1)."""

    def __init__(self, layout="NCHW", **kwargs):
        _global_init(self, 2, "max", layout, kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over each channel's whole volume: (N, C, D, H, W) -> (N, C, 1, 1, 1)."""

    def __init__(self, layout="NCDHW", **kwargs):
        _global_init(self, 3, "max", layout, kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width: (N, C, W) -> (N, C, 1)."""

    def __init__(self, layout="NCW", **kwargs):
        _global_init(self, 1, "avg", layout, kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over each channel's whole plane: (N, C, H, W) -> (N, C, 1, 1)."""

    def __init__(self, layout="NCHW", **kwargs):
        _global_init(self, 2, "avg", layout, kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over each channel's whole volume: (N, C, D, H, W) -> (N, C, 1, 1, 1)."""

    def __init__(self, layout="NCDHW", **kwargs):
        _global_init(self, 3, "avg", layout, kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the two spatial axes of (N, C, H, W) by reflection: `padding` on every side, or
    MXNet's 8-tuple pad_width (before/after per axis, N and C zero)."""

    def __init__(self, padding=0, **kwargs):
        super(ReflectionPad2D, self).__init__(**kwargs)
        if _is_int(padding):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        padding = tuple(padding)
        if len(padding) != 8:
            raise AssertionError("ReflectionPad2D: padding must be an int or 8 ints, got %r"
                                 % (padding,))
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
