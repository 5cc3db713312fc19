"""The Symbol class, Variable/var, Group, load and load_json (MXNet 1.x's mx.sym API over the
MXSymbol* C calls; docs/symbolic.md)."""
import warnings

import numpy as np

from ..attribute import AttrScope
from ..base import MXNetError, _LIB, numeric_types, string_types
from ..name import NameManager
from ..ndarray.ndarray import _DTYPE_MX_TO_NP, _DTYPE_NP_TO_MX

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json"]

_STYPES = {"default": 0, "row_sparse": 1, "csr": 2}


class Symbol(object):
    """A symbolic graph: one or more outputs of variables and operator nodes."""

    __slots__ = ["handle"]

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None and _LIB is not None:
            try:
                _LIB.symbol_free(handle)
            except Exception:  # noqa: BLE001 (interpreter shutdown)
                pass
            self.handle = None

    # ---- copying, pickling ----
    def __copy__(self):
        return Symbol(_LIB.symbol_copy(self.handle))

    def __deepcopy__(self, _):
        return self.__copy__()

    def __getstate__(self):
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        self.handle = _LIB.symbol_from_json(state["handle"])

    # ---- composition ----
    def __call__(self, *args, **kwargs):
        s = self.__copy__()
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args, **kwargs):
        name = kwargs.pop("name", None)
        if name is not None and not isinstance(name, string_types):
            raise TypeError("name must be a string")
        if args and kwargs:
            raise TypeError("compose only accept input Symbols either as positional or keyword "
                            "arguments, not both")
        keys, handles = [], []
        for i, a in enumerate(args):
            if not isinstance(a, Symbol):
                raise TypeError("Compose expect `Symbol` as arguments, got %s at position %d"
                                % (type(a).__name__, i))
            keys.append(None)
            handles.append(a.handle)
        for k, v in kwargs.items():
            if not isinstance(v, Symbol):
                raise TypeError("Compose expect `Symbol` as arguments, got %s for '%s'"
                                % (type(v).__name__, k))
            keys.append(k)
            handles.append(v.handle)
        _LIB.symbol_compose(self.handle, name or "", keys, handles)

    # ---- outputs ----
    def __len__(self):
        return _LIB.symbol_num_outputs(self.handle)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Group([self[i] for i in range(len(self))[index]])
        if isinstance(index, string_types):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ValueError('Cannot find output that matches name "%s"' % index)
            if len(matches) > 1:
                raise ValueError('There are multiple outputs with name "%s"' % index)
            index = matches[0]
        if not isinstance(index, (int, np.integer)):
            raise TypeError("Symbol only support integer index to fetch i-th output")
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("Symbol index %d out of range (%d outputs)" % (index, n))
        if n == 1:
            return self
        return Symbol(_LIB.symbol_get_output(self.handle, int(index)))

    @property
    def name(self):
        return _LIB.symbol_get_name(self.handle)

    def __repr__(self):
        name = self.name
        if name is None:
            return "<Symbol group [%s]>" % ", ".join(s.name for s in self)
        return "<Symbol %s>" % name

    def get_internals(self):
        return Symbol(_LIB.symbol_get_internals(self.handle))

    def get_children(self):
        h = _LIB.symbol_get_children(self.handle)
        return Symbol(h) if h else None

    def list_arguments(self):
        return _LIB.symbol_list_arguments(self.handle)

    def list_outputs(self):
        return _LIB.symbol_list_outputs(self.handle)

    def list_auxiliary_states(self):
        return _LIB.symbol_list_auxiliary_states(self.handle)

    def list_inputs(self):
        return self.list_arguments() + self.list_auxiliary_states()

    # ---- attributes ----
    def attr(self, key):
        return _LIB.symbol_get_attr(self.handle, key)

    def list_attr(self, recursive=False):
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been deprecated. "
                                     "Please use attr_dict instead.")
        return dict(_LIB.symbol_list_attr(self.handle, False))

    def attr_dict(self):
        ret = {}
        for key, value in _LIB.symbol_list_attr(self.handle, True):
            node, attr = key.split("$", 1)
            ret.setdefault(node, {})[attr] = value
        return ret

    def _set_attr(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, string_types):
                raise ValueError("Set Attr only accepts string values")
            _LIB.symbol_set_attr(self.handle, key, value)

    # ---- inference ----
    def _known(self, args, kwargs, convert, what):
        if args and kwargs:
            raise ValueError("Can only specify known argument %s either by positional or kwargs "
                             "way." % what)
        names = self.list_arguments()
        known = []
        if args:
            for i, value in enumerate(args):
                if value is None:
                    continue
                known.append((names[i] if i < len(names) else "#%d" % i, convert(i, value)))
        else:
            for k, value in kwargs.items():
                c = convert(k, value)
                if c is not None:
                    known.append((k, c))
        return known

    def _infer_shape_impl(self, partial, *args, **kwargs):
        def convert(key, value):
            if not isinstance(value, tuple):
                raise TypeError("Arguments need to be shapes (tuple), but '%s' is %s."
                                % (key, type(value)))
            return [int(d) for d in value]

        known = self._known(args, kwargs, convert, "shapes")
        if args and len(args) > len(self.list_arguments()):
            raise ValueError("infer_shape: %d positional shapes given, the symbol has %d "
                             "arguments" % (len(args), len(self.list_arguments())))
        try:
            arg, out, aux, complete = _LIB.symbol_infer_shape(
                self.handle, [k for k, _ in known], [v for _, v in known], partial)
        except MXNetError:
            print("infer_shape error. Arguments:")
            for i, value in enumerate(args):
                print("  #%d: %s" % (i, value))
            for k, value in kwargs.items():
                print("  %s: %s" % (k, value))
            raise
        return arg, out, aux, complete

    def infer_shape(self, *args, **kwargs):
        arg, out, aux, complete = self._infer_shape_impl(False, *args, **kwargs)
        if not complete:
            unknown = []
            for name, shape in zip(self.list_arguments(), arg):
                if not shape or 0 in shape:
                    if len(unknown) >= 10:
                        unknown.append("...")
                        break
                    unknown.append("%s: %s" % (name, shape))
            warnings.warn("Cannot decide shape for the following arguments (0s in shape means "
                          "unknown dimensions). Consider providing them as input:\n\t"
                          + "\n\t".join(unknown), stacklevel=2)
            return (None, None, None)
        return arg, out, aux

    def infer_shape_partial(self, *args, **kwargs):
        arg, out, aux, _ = self._infer_shape_impl(True, *args, **kwargs)
        return arg, out, aux

    def _infer_type_impl(self, *args, **kwargs):
        def convert(key, value):
            if value is None:
                return None
            try:
                code = _DTYPE_NP_TO_MX.get(np.dtype(value).type)
            except TypeError:
                code = None
            if code is None:
                if isinstance(key, int):
                    raise TypeError("Argument %d: dtype %r is not supported" % (key, value))
                return None  # MXNet drops keyword dtypes it does not know
            return code

        known = self._known(args, kwargs, convert, "types")
        arg, out, aux, complete = _LIB.symbol_infer_type(
            self.handle, [k for k, _ in known], [v for _, v in known])

        def types(codes):
            return [_DTYPE_MX_TO_NP[c] if c >= 0 else None for c in codes]

        return types(arg), types(out), types(aux), complete

    def infer_type(self, *args, **kwargs):
        arg, out, aux, complete = self._infer_type_impl(*args, **kwargs)
        if not complete:
            unknown = ["%s: %s" % (n, t) for n, t in zip(self.list_arguments(), arg) if t is None]
            warnings.warn("Cannot decide type for the following arguments. Consider providing "
                          "them as input:\n\t" + "\n\t".join(unknown[:10]), stacklevel=2)
            return (None, None, None)
        return arg, out, aux

    def infer_type_partial(self, *args, **kwargs):
        arg, out, aux, _ = self._infer_type_impl(*args, **kwargs)
        return arg, out, aux

    # ---- serialization, printing ----
    def tojson(self, remove_amp_cast=True):  # noqa: ARG002 (no AMP cast nodes exist)
        return _LIB.symbol_tojson(self.handle)

    def save(self, fname, remove_amp_cast=True):  # noqa: ARG002
        if not isinstance(fname, string_types):
            raise TypeError("fname need to be string")
        _LIB.symbol_save(self.handle, fname)

    # ---- binding (nanomx/executor.py) ----
    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None, shared_buffer=None,
                    **kwargs):
        """Binds to new zero-filled arrays: shapes given as name=tuple, the rest inferred."""
        from ..executor import _simple_bind
        return _simple_bind(self, ctx, grad_req, type_dict, stype_dict, group2ctx,
                            shared_arg_names, shared_exec, shared_buffer, **kwargs)

    _simple_bind = simple_bind

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Binds to the caller's arrays (used as given, no copy)."""
        from ..executor import _bind
        return _bind(self, ctx, args, args_grad, grad_req, aux_states, group2ctx, shared_exec)

    _bind = bind

    def debug_str(self):
        return _LIB.symbol_print(self.handle)

    # ---- arithmetic (MXNet's operator symbols and names) ----
    def __add__(self, other):
        return _binary(self, other, "elemwise_add", "_plus", "_plus_scalar", "_plusscalar")

    __radd__ = __add__

    def __sub__(self, other):
        return _binary(self, other, "elemwise_sub", "_minus", "_minus_scalar", "_minusscalar")

    def __rsub__(self, other):
        return _scalar(self, other, "_rminus_scalar", "_rminusscalar")

    def __mul__(self, other):
        return _binary(self, other, "elemwise_mul", "_mul", "_mul_scalar", "_mulscalar")

    __rmul__ = __mul__

    def __truediv__(self, other):
        return _binary(self, other, "elemwise_div", "_div", "_div_scalar", "_divscalar")

    def __rtruediv__(self, other):
        return _scalar(self, other, "_rdiv_scalar", "_rdivscalar")

    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __pow__(self, other):
        return _binary(self, other, "_power", "_power", "_power_scalar", "_powerscalar")

    def __rpow__(self, other):
        return _scalar(self, other, "_rpower_scalar", "_rpowerscalar")

    def __neg__(self):
        return _scalar(self, -1.0, "_mul_scalar", "_mulscalar")

    def __bool__(self):
        raise NotImplementedError("The truth value of a Symbol is not defined")


def _create(op_name, hint, inputs, attrs, name=None):
    """An operator symbol named by the NameManager and composed with `inputs` (positional)."""
    from .register import _op_handle  # noqa: PLC0415 (register imports this module)

    handle = _op_handle(op_name)
    keys = [str(k) for k in attrs]
    vals = [str(v) for v in attrs.values()]
    s = Symbol(_LIB.symbol_create_atomic(handle, keys, vals))
    name = NameManager.current.get(name, hint)
    _LIB.symbol_compose(s.handle, name, [None] * len(inputs), [x.handle for x in inputs])
    return s


# MXNet's symbol arithmetic uses the elemwise_* operators; where this build registers only
# the broadcasting ones, they compute the same for equal shapes.
_FALLBACK = {"elemwise_add": "broadcast_add", "elemwise_sub": "broadcast_sub",
             "elemwise_mul": "broadcast_mul", "elemwise_div": "broadcast_div",
             "_power": "broadcast_power"}


def _binary(lhs, rhs, op, hint, scalar_op, scalar_hint):
    if isinstance(rhs, Symbol):
        from .register import _has_op  # noqa: PLC0415

        if not _has_op(op) and op in _FALLBACK:
            op = _FALLBACK[op]
        return _create(op, hint, [lhs, rhs], {})
    return _scalar(lhs, rhs, scalar_op, scalar_hint)


def _scalar(sym, scalar, op, hint):
    if not isinstance(scalar, numeric_types):
        raise TypeError("type %s not supported" % str(type(scalar)))
    return _create(op, hint, [sym], {"scalar": float(scalar)})


_HIDDEN = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
             stype=None, **kwargs):
    """A variable (an input of the graph) with MXNet's attributes."""
    if not isinstance(name, string_types):
        raise TypeError("Expect a string for variable `name`")
    attr = AttrScope.current.get(attr)
    attr = dict(attr) if attr else {}
    if shape is not None:
        attr["__shape__"] = str(tuple(shape))
    if lr_mult is not None:
        attr["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attr["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attr["__dtype__"] = str(_DTYPE_NP_TO_MX[np.dtype(dtype).type])
    if init is not None:
        if not isinstance(init, string_types):
            init = init.dumps()
        attr["__init__"] = init
    if stype is not None:
        attr["__storage_type__"] = str(_STYPES[stype])
    for k, v in kwargs.items():
        if k.startswith("__") and k.endswith("__"):
            attr[k] = str(v)
        else:
            raise ValueError("Attribute name=%s is not supported. Additional attributes must "
                             "start and end with double underscores, e.g, __yourattr__" % k)
    s = Symbol(_LIB.symbol_create_variable(name))
    for k, v in attr.items():
        _LIB.symbol_set_attr(s.handle, k, str(v))
    return s


var = Variable


def Group(symbols):
    """A symbol whose outputs are those of `symbols`, in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol(_LIB.symbol_create_group([s.handle for s in symbols]))


def load(fname):
    """Loads a symbol saved with Symbol.save (MXNet's JSON graph format)."""
    if not isinstance(fname, string_types):
        raise TypeError("fname need to be string")
    return Symbol(_LIB.symbol_load(fname))


def load_json(json_str):
    """A symbol from MXNet's JSON graph text."""
    if not isinstance(json_str, string_types):
        raise TypeError("fname required to be string")
    return Symbol(_LIB.symbol_from_json(json_str))


