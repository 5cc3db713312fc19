"""Generates one Python function per registered operator, as MXNet does at import.

A generated function takes the operator's arrays first and then its attributes, positionally or
by name, in the order MXSymbolGetAtomicSymbolInfo lists them; `out=` writes the result into an
existing array. Attributes travel as text (str(value), a dtype as its name), which is how
MXImperativeInvoke receives them.
"""
import numpy as np

from ..base import _LIB, _Null
from ..context import Context
from . import _internal, op
from .ndarray import NDArray, _invoke


def _attr_text(function, key, value):
    if isinstance(value, NDArray):
        raise TypeError("%s(): attribute '%s' takes a value, not an NDArray" % (function, key))
    if key == "dtype" and not isinstance(value, str):
        return np.dtype(value).name
    if isinstance(value, np.ndarray):
        return str(tuple(value.tolist()))
    if isinstance(value, Context):
        return str(value)
    return str(value)


def _make_variadic_function(name, handle, input_name, params):
    """An operator taking any number of arrays (add_n, ...): they come positionally, the
    attributes by name; the count attribute (num_args) is filled in by the library."""
    param_set = set(params)

    def function(*args, out=None, name=None, **kwargs):  # noqa: ARG001 (name: MXNet's, unused)
        for i, value in enumerate(args):
            if not isinstance(value, NDArray):
                raise TypeError("%s(): argument '%s[%d]' must be an NDArray, got %s"
                                % (function.__name__, input_name, i, type(value).__name__))
        keys, vals = [], []
        for key, value in kwargs.items():
            if key not in param_set:
                raise TypeError("%s() got an unexpected keyword argument '%s' (it takes *%s, %s)"
                                % (function.__name__, key, input_name, ", ".join(params)))
            if value is not _Null:
                keys.append(key)
                vals.append(_attr_text(function.__name__, key, value))
        if not args:
            raise TypeError("%s() needs at least one NDArray" % function.__name__)
        if out is not None and not isinstance(out, (NDArray, list, tuple)):
            raise TypeError("%s(): out must be an NDArray, got %s"
                            % (function.__name__, type(out).__name__))
        return _invoke(handle, args, keys, vals, out)

    function.__name__ = name
    function.__qualname__ = name
    function.__doc__ = ("%s(*%s, %s, out=None): nanomx operator '%s' (any number of arrays)"
                        % (name, input_name, ", ".join(params), name))
    return function


def _make_function(name, handle, arg_names, arg_types):
    variadic = [n for n, t in zip(arg_names, arg_types) if t.endswith("[]")]
    if variadic:
        params = [n for n, t in zip(arg_names, arg_types) if not t.startswith("NDArray")]
        return _make_variadic_function(name, handle, variadic[0], params)
    inputs = [n for n, t in zip(arg_names, arg_types) if t.startswith("NDArray")]
    params = [n for n, t in zip(arg_names, arg_types) if not t.startswith("NDArray")]
    input_index = {n: i for i, n in enumerate(inputs)}
    param_set = set(params)
    n_inputs = len(inputs)
    max_positional = n_inputs + len(params)
    invoke = _LIB.invoke

    def function(*args, out=None, name=None, **kwargs):  # noqa: ARG001 (name: MXNet's, unused)
        # The common call, exactly the operator's arrays and nothing else, goes straight to the
        # extension: the general path below costs about 0.9 µs of Python per call
        # (bench/python_layers.py, docs/python.md).
        if not kwargs and out is None and len(args) == n_inputs:
            for value in args:
                if not isinstance(value, NDArray):
                    break
            else:
                return invoke(handle, args, (), (), None)
        if len(args) > max_positional:
            raise TypeError("%s() takes at most %d positional arguments (%s), %d given"
                            % (function.__name__, max_positional, ", ".join(arg_names),
                               len(args)))
        arrays = [None] * n_inputs
        keys, vals = [], []
        for i, value in enumerate(args):
            if i < n_inputs:
                if not isinstance(value, NDArray):
                    raise TypeError("%s(): argument '%s' must be an NDArray, got %s"
                                    % (function.__name__, inputs[i], type(value).__name__))
                arrays[i] = value
            elif value is not _Null:
                keys.append(params[i - n_inputs])
                vals.append(_attr_text(function.__name__, params[i - n_inputs], value))
        for key, value in kwargs.items():
            if key in input_index:
                if arrays[input_index[key]] is not None:
                    raise TypeError("%s() got multiple values for argument '%s'"
                                    % (function.__name__, key))
                if not isinstance(value, NDArray):
                    raise TypeError("%s(): argument '%s' must be an NDArray, got %s"
                                    % (function.__name__, key, type(value).__name__))
                arrays[input_index[key]] = value
            elif key in param_set:
                if key in keys:
                    raise TypeError("%s() got multiple values for argument '%s'"
                                    % (function.__name__, key))
                if value is not _Null:
                    keys.append(key)
                    vals.append(_attr_text(function.__name__, key, value))
            else:
                raise TypeError("%s() got an unexpected keyword argument '%s' (it takes %s)"
                                % (function.__name__, key, ", ".join(arg_names) or "none"))
        # Trailing inputs not given are left out (no_bias=True drops the bias, LeakyReLU takes
        # gamma only for prelu), as MXNet skips None arrays; the library checks the count
        # against the attributes and names what is missing.
        while arrays and arrays[-1] is None:
            arrays.pop()
        missing = [inputs[i] for i, a in enumerate(arrays) if a is None]
        if missing:
            raise TypeError("%s() missing NDArray argument(s): %s"
                            % (function.__name__, ", ".join(missing)))
        if out is not None and not isinstance(out, (NDArray, list, tuple)):
            raise TypeError("%s(): out must be an NDArray, got %s"
                            % (function.__name__, type(out).__name__))
        return _invoke(handle, arrays, keys, vals, out)

    function.__name__ = name
    function.__qualname__ = name
    function.__doc__ = ("%s(%s, out=None): nanomx operator '%s' (arrays: %s; attributes: %s)"
                        % (name, ", ".join(arg_names), name, ", ".join(inputs) or "none",
                           ", ".join(params) or "none"))
    return function


def _populate(make_function, get_handle, public, internal):
    """Adds make_function(op_name, handle, arg_names, arg_types) for each operator name and
    alias to `internal` when the name has a leading underscore, else to `public` (and to that
    module's __all__). Shared with symbol/register.py."""
    for op_name in _LIB.list_op_names():
        handle = get_handle(op_name)
        _, arg_names, arg_types = _LIB.op_info(handle)
        function = make_function(op_name, handle, arg_names, arg_types)
        module = internal if op_name.startswith("_") else public
        function.__module__ = module.__name__
        setattr(module, op_name, function)
        module.__all__.append(op_name)


def populate():
    """Fills nanomx.ndarray.op (public names) and nanomx.ndarray._internal (names with a
    leading underscore) with a function per operator name and alias."""
    _populate(_make_function, _LIB.get_op_handle, op, _internal)
