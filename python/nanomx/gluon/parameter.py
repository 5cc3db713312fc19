"""Gluon parameters: Parameter, Constant and ParameterDict (MXNet 1.9.1's gluon.parameter).

A Parameter holds one array per context once initialized (plus one gradient array each unless
grad_req is 'null'); until then it may wait for its shape (deferred initialization, finished
by the first forward pass of the block that owns it). The gradient arrays are attached to the
data arrays with autograd.mark_variables, so loss.backward() fills them.
"""
import re
import warnings
from collections import OrderedDict, defaultdict

import numpy as np

from .. import autograd, context, initializer, ndarray, symbol
from ..base import MXNetError
from ..context import Context
from ..ndarray.ndarray import mx_real_t
from .utils import _brief_print_list, _indent, shape_is_known

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict",
           "tensor_types"]

tensor_types = (symbol.Symbol, ndarray.NDArray)

_GRAD_REQS = ("write", "add", "null")


class DeferredInitializationError(MXNetError):
    """A parameter's data was asked for before its deferred initialization happened."""


def _check_stype(name, stype, what):
    if stype == "default":
        return
    if stype in ("row_sparse", "csr"):
        raise ValueError("%s for Parameter '%s' is '%s': nanomx supports only dense ('default') "
                         "parameters and gradients" % (what, name, stype))
    raise ValueError("%s for Parameter '%s' must be one of 'default', 'row_sparse', or 'csr', "
                     "but got '%s'" % (what, name, stype))


def _as_ctx_list(ctx):
    if ctx is None:
        return [context.current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    ctx = list(ctx)
    for c in ctx:
        if not isinstance(c, Context):
            raise TypeError("ctx must be a Context or a list of Context, got %s"
                            % type(c).__name__)
    return ctx


class Parameter(object):
    """A named weight of a Block: shape, dtype, initializer, learning-rate and weight-decay
    multipliers, and its arrays (data and gradient) on each context once initialized."""

    def __init__(self, name, grad_req="write", shape=None, dtype=mx_real_t, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype="default", grad_stype="default"):
        _check_stype(name, stype, "stype")
        _check_stype(name, grad_stype, "grad_stype")
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        self._shape = tuple(shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        self._stype = stype
        self._grad_stype = grad_stype

    def __repr__(self):
        return "Parameter %s (shape=%s, dtype=%s)" % (self.name, self.shape, self.dtype)

    # ---- attributes ----
    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        assert req in _GRAD_REQS, \
            "grad_req must be one of 'write', 'add', or 'null', but got '%s'" % req
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = [d.detach() for d in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape; 0 (or -1) marks a dimension not known yet."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        if new_shape is not None:
            new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        assert new_shape is not None and len(self._shape) == len(new_shape) and \
            all(j in (-1, 0, i) for i, j in zip(new_shape, self._shape)), \
            "Expected shape %s is incompatible with given shape %s." % (
                str(new_shape), str(self._shape))
        self._shape = new_shape

    @property
    def stype(self):
        return self._stype

    def _set_trainer(self, trainer):
        self._trainer = trainer

    # ---- arrays ----
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = context.current_context()
            idx = self._ctx_map.get((ctx.device_typeid & 1, ctx.device_id))
            if idx is not None:
                return arr_list[idx]
            raise RuntimeError("Parameter '%s' was not initialized on context %s. It was only "
                               "initialized on %s." % (self.name, str(ctx), str(self._ctx_list)))
        if self._deferred_init:
            raise DeferredInitializationError(
                "Parameter '%s' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing Parameters. "
                "You can also avoid deferred initialization by specifying in_units, "
                "num_features, etc., for network layers." % self.name)
        raise RuntimeError("Parameter '%s' has not been initialized. Note that you should "
                           "initialize parameters and create Trainer with "
                           "Block.collect_params() instead of Block.params because the later "
                           "does not include Parameters of nested child Blocks" % self.name)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """(Re)initializes from a loaded array: completes unknown dimensions of the shape,
        checks (or casts) the dtype, then sets the data."""
        if cast_dtype:
            assert dtype_source in ("current", "saved")
        if self.shape:
            for self_dim, data_dim in zip(self.shape, data.shape):
                assert self_dim in (0, -1, data_dim), \
                    "Failed loading Parameter '%s' from saved params: shape incompatible " \
                    "expected %s vs saved %s" % (self.name, str(self.shape), str(data.shape))
            assert len(self.shape) == len(data.shape), \
                "Failed loading Parameter '%s' from saved params: shape incompatible " \
                "expected %s vs saved %s" % (self.name, str(self.shape), str(data.shape))
            self.shape = tuple(j if i in (0, -1) else i for i, j in zip(self.shape, data.shape))
        if self.dtype:
            if cast_dtype and np.dtype(self.dtype).type != data.dtype:
                if dtype_source == "current":
                    data = data.astype(self.dtype, copy=False)
                else:
                    self.dtype = data.dtype
            else:
                assert np.dtype(self.dtype).type == np.dtype(data.dtype).type, \
                    "Failed loading Parameter '%s' from saved params: dtype incompatible " \
                    "expected %s vs saved %s. Set cast_dtype=True to cast the dtype of saved " \
                    "params." % (self.name, str(self.dtype), str(data.dtype))
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                assert ctx is None or set(ctx) == set(self._deferred_init[1]), \
                    "Failed to load Parameter '%s' on %s because it was previous initialized " \
                    "on %s." % (self.name, str(ctx), str(self.list_ctx()))
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [context.cpu()]
            self._init_impl(data, ctx)
        else:
            assert ctx is None or set(ctx) == set(self.list_ctx()), \
                "Failed to load Parameter '%s' on %s because it was previous initialized " \
                "on %s." % (self.name, str(ctx), str(self.list_ctx()))
            self.set_data(data)
        self._deferred_init = ()

    def _finish_deferred_init(self):
        """Initializes now that the shape is known (no-op without a pending deferral)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        assert shape_is_known(self.shape), \
            "Cannot initialize Parameter '%s' because it has invalid shape: %s. Please " \
            "specify in_units, in_channels, etc for `Block`s." % (self.name, str(self.shape))
        with autograd.pause():
            if data is None:
                data = ndarray.zeros(self.shape, ctx=context.cpu(), dtype=self.dtype)
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {"__init__": init}), data)
            self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list):
        """Copies `data` to each context and attaches the gradient arrays."""
        self._ctx_list = list(ctx_list)
        self._ctx_map = {}
        for i, ctx in enumerate(self._ctx_list):
            self._ctx_map.setdefault((ctx.device_typeid & 1, ctx.device_id), i)
        with autograd.pause():
            self._data = [data.copyto(ctx) for ctx in self._ctx_list]
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == "null":
            self._grad = None
            return
        self._grad = [ndarray.zeros(d.shape, ctx=d.context, dtype=d.dtype) for d in self._data]
        autograd.mark_variables(self._check_and_get(self._data, list), self._grad,
                                self.grad_req)

    def _reduce(self):
        """The average of the copies, on cpu (what save and export write)."""
        block = self.list_data()
        if len(block) > 1:
            ctx = context.cpu()
            return ndarray.add_n(*(w.copyto(ctx) for w in block)) / len(block)
        return self.data().copyto(context.cpu())

    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Creates the arrays on `ctx` (default: the current context) with `init`, else
        self.init, else `default_init`. With an unknown shape, initialization is deferred
        to the first forward pass when allow_deferred_init, else ValueError."""
        if self._data is not None and not force_reinit:
            warnings.warn("Parameter '%s' is already initialized, ignoring. Set "
                          "force_reinit=True to re-initialize." % self.name, stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _as_ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError("Cannot initialize Parameter '%s' because it has invalid shape: "
                             "%s." % (self.name, str(self.shape)))
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def reset_ctx(self, ctx):
        """Moves the arrays (their average) to `ctx` (a Context or a list)."""
        ctx = _as_ctx_list(ctx)
        if self._data:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError("Cannot reset context for Parameter '%s' because it has not been "
                             "initialized." % self.name)

    def set_data(self, data):
        """Writes `data` into every copy (in place; before a deferred initialization it
        becomes the initial value)."""
        self.shape = data.shape
        if self._data is None:
            assert self._deferred_init, "Parameter '%s' has not been initialized" % self.name
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        with autograd.pause():
            for arr in self._check_and_get(self._data, list):
                arr[:] = data

    def row_sparse_data(self, row_id):
        raise RuntimeError("Cannot return a copy of Parameter %s via row_sparse_data() because "
                           "its storage type is %s. Please use data() instead."
                           % (self.name, self._stype))

    def list_row_sparse_data(self, row_id):
        raise RuntimeError("Cannot return copies of Parameter '%s' on all contexts via "
                           "list_row_sparse_data() because its storage type is %s. Please use "
                           "data() instead." % (self.name, self._stype))

    def data(self, ctx=None):
        """The array on `ctx` (the only one when ctx is None and there is one copy)."""
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        """The gradient array on `ctx`."""
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because "
                               "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because "
                               "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts this parameter is (or will be, when deferred) initialized on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise RuntimeError("Parameter '%s' has not been initialized" % self.name)
        return self._ctx_list

    def zero_grad(self):
        """Sets the gradient arrays to 0 (needed each step with grad_req='add')."""
        if self._grad is None:
            return
        with autograd.pause():
            for g in self._grad:
                g[:] = 0

    def var(self):
        """The symbol variable of this parameter (cached), carrying shape, dtype, lr_mult,
        wd_mult and init as attributes."""
        if self._var is None:
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init)
        return self._var

    def cast(self, dtype):
        """Casts data and gradient to `dtype` (new arrays, re-attached to autograd)."""
        self._dtype = dtype
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(dtype) for d in self._data]
            if self._grad is None:
                return
            self._grad = [g.astype(dtype) for g in self._grad]
            autograd.mark_variables(self._data, self._grad, self.grad_req)


class Constant(Parameter):
    """A parameter that training never changes (grad_req is always 'null'); its value is
    the initial data, and set_data can still replace it."""

    def __init__(self, name, value):
        if not isinstance(value, ndarray.NDArray):
            value = ndarray.array(value)
        self.value = value

        class _ConstantInit(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)

            _init_default = _init_weight

        init_name = "Constant_{}_{}".format(name, id(self))
        initializer.alias(init_name)(_ConstantInit)
        super(Constant, self).__init__(name, grad_req="null", shape=value.shape,
                                       dtype=value.dtype, init=init_name)

    def __repr__(self):
        return "Constant %s (shape=%s, dtype=%s)" % (self.name, self.shape, self.dtype)

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn('Constant parameter "{}" does not support grad_req other than "null", '
                          'and new value "{}" is ignored.'.format(self.name, req))


class ParameterDict(object):
    """An ordered name -> Parameter dict whose get() creates parameters named with its
    prefix (first looking in the `shared` dict, which is how blocks share weights)."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + " " if self._prefix else ""
        content = "\n".join([_indent("  {0}".format(v), 2) for v in self.values()])
        return "{name}(\n{content}\n)".format(name=name, content=content)

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name, **kwargs):
        """The parameter `prefix + name`, created with `kwargs` when it does not exist; for an
        existing one, each given attribute must match (unknown shape dimensions are filled
        in, None-valued attributes are set)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if hasattr(param, k) and getattr(param, k) is not None:
                existing = getattr(param, k)
                if k == "shape" and v is not None:
                    v = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
                    if len(v) == len(existing):
                        inferred_shape = []
                        matched = True
                        for dim1, dim2 in zip(v, existing):
                            if dim1 != dim2 and dim1 > 0 and dim2 > 0:
                                matched = False
                                break
                            elif dim1 == dim2:
                                inferred_shape.append(dim1)
                            elif dim1 in (0, -1):
                                inferred_shape.append(dim2)
                            else:
                                inferred_shape.append(dim1)
                        if matched:
                            param._shape = tuple(inferred_shape)
                            continue
                elif k == "dtype" and np.dtype(v) == np.dtype(existing):
                    continue
                assert v is None or v == existing, \
                    "Cannot retrieve Parameter '%s' because desired attribute does not match " \
                    "with stored for attribute '%s': desired '%s' vs stored '%s'." % (
                        name, k, str(v), str(getattr(param, k)))
            else:
                setattr(param, k, v)
        return param

    def get_constant(self, name, value=None):
        """The Constant `prefix + name`, created from `value` when it does not exist."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError("No constant named '{}'. Please specify value if you want to "
                               "create a new constant.".format(name))
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            assert isinstance(param, Constant), \
                "Parameter '{}' already exists but it is not a constant.".format(name)
            if isinstance(value, ndarray.NDArray):
                value = value.asnumpy()
            assert param.shape == value.shape and \
                (param.value.asnumpy() == value).all(), \
                "Constant '{}' already exists but it's value doesn't match new value".format(name)
        return param

    def update(self, other):
        """Adds the parameters of `other` (a dict or ParameterDict); the same name bound to a
        different Parameter is an error."""
        for k, v in other.items():
            if k in self._params:
                assert self._params[k] is v, \
                    "Cannot update self with other because they have different Parameters " \
                    "with the same name '%s'" % k
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initializes every parameter (init is the default for those without their own)."""
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        for v in self.values():
            v.zero_grad()

    def reset_ctx(self, ctx):
        for v in self.values():
            v.reset_ctx(ctx)

    def list_ctx(self):
        s = set()
        for v in self.values():
            s.update(v.list_ctx())
        return list(s)

    def setattr(self, name, value):
        """Sets attribute `name` of every parameter (grad_req, lr_mult, ...)."""
        for v in self.values():
            setattr(v, name, value)

    def save(self, filename, strip_prefix=""):
        """Saves the parameters (names without `strip_prefix`) with mx.nd.save."""
        arg_dict = {}
        for param in self.values():
            weight = param._reduce()
            if not param.name.startswith(strip_prefix):
                raise ValueError(
                    "Prefix '%s' is to be striped before saving, but Parameter's name '%s' "
                    "does not start with '%s'. this may be due to your Block shares parameters "
                    "from other Blocks or you forgot to use 'with name_scope()' when creating "
                    "child blocks." % (strip_prefix, param.name, strip_prefix))
            arg_dict[param.name[len(strip_prefix):]] = weight
        ndarray.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Loads a file written by save (or by export: 'arg:'/'aux:' prefixes are dropped)."""
        if restore_prefix:
            for name in self.keys():
                assert name.startswith(restore_prefix), \
                    "restore_prefix is '%s' but Parameters name '%s' does not start with '%s'." \
                    % (restore_prefix, name, restore_prefix)
        loaded = ndarray.load(filename)
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename,
                       cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix="", filename=None, cast_dtype=False, dtype_source="current"):
        """Loads from a name -> NDArray dict (names may carry 'arg:'/'aux:')."""
        lprefix = len(restore_prefix)
        if isinstance(param_dict, dict):
            loaded = [(k[4:] if k.startswith("arg:") or k.startswith("aux:") else k, v)
                      for k, v in param_dict.items()]
        else:
            loaded = param_dict
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        error_str = "file: %s" % filename if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                assert name in arg_dict, \
                    "Parameter '%s' is missing in %s, which contains parameters: %s. Please " \
                    "make sure source and target networks have the same prefix." % (
                        name[lprefix:], error_str, _brief_print_list(arg_dict.keys()))
        for name in arg_dict:
            if name not in self._params:
                assert ignore_extra, \
                    "Parameter '%s' loaded from %s is not present in ParameterDict, choices " \
                    "are: %s. Set ignore_extra to True to ignore. Please make sure source and " \
                    "target networks have the same prefix." % (
                        name[lprefix:], error_str, _brief_print_list(self._params.keys()))
                continue
            self[name]._load_init(arg_dict[name], ctx, cast_dtype=cast_dtype,
                                  dtype_source=dtype_source)


def _select(params, select):
    """The entries of params (a dict) whose names match regex `select` (re.match)."""
    pattern = re.compile(select)
    return OrderedDict((k, v) for k, v in params.items() if pattern.match(k))


def _params_by_object(params):
    """Parameter -> the names it is registered under (shared parameters have several)."""
    inv = defaultdict(list)
    for k, v in params.items():
        inv[v].append(k)
    return inv
