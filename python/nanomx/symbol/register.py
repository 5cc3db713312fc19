"""Generates one symbol function per registered operator (mx.sym.FullyConnected, mx.sym.dot,
...), from the same C API operator list as mx.nd's functions (ndarray/register.py).

A generated function takes input symbols positionally or by input name and every other
argument as an attribute (str(value); a dtype as its numpy name), plus `name` (else the
NameManager names it after the lower-cased function name: `fullyconnected0`) and `attr`
(merged over the current AttrScope). Inputs left out become variables `<name>_<input>`.
"""
from ..attribute import AttrScope
from ..base import _LIB, _Null
from ..name import NameManager
from ..ndarray.register import _attr_text, _populate
from . import _internal, op
from .symbol import Symbol

_HANDLES = {}


def _has_op(name):
    if not _HANDLES:
        for n in _LIB.list_op_names():
            _op_handle(n)
    return name in _HANDLES


def _op_handle(name):
    handle = _HANDLES.get(name)
    if handle is None:
        handle = _HANDLES[name] = _LIB.get_op_handle(name)
    return handle


def _custom_inputs(keys, vals, named):
    """Custom's named Symbol inputs in the order of its property class's list_arguments()
    (the class is made with the call's keywords, as text, as the library makes it)."""
    from ..operator import _registry
    kwargs = dict(zip(keys, vals))
    op_type = kwargs.pop("op_type", None)
    if op_type not in _registry:
        raise ValueError("Cannot find custom operator %s" % (op_type,))
    arguments = _registry[op_type](**kwargs).list_arguments()
    unknown = sorted(set(named) - set(arguments))
    if unknown:
        raise TypeError("Custom(op_type=%s): unknown input(s) %s (arguments: %s)"
                        % (op_type, ", ".join(unknown), ", ".join(arguments)))
    return [named[a] for a in arguments if a in named]


def _make_function(op_name, handle, arg_names, arg_types):
    variadic = [n for n, t in zip(arg_names, arg_types) if t.endswith("[]")]
    inputs = [n for n, t in zip(arg_names, arg_types) if t.startswith("NDArray")]
    params = [n for n, t in zip(arg_names, arg_types) if not t.startswith("NDArray")]
    input_set, param_set = set(inputs), set(params)
    hint = op_name.lower()
    # Custom passes every keyword on to the custom operator's property class (as text).
    any_key = op_name == "Custom"

    def function(*args, name=None, attr=None, out=None, **kwargs):
        if out is not None:
            raise TypeError("%s(): symbols take no out=" % op_name)
        pos_syms, kw_syms, keys, vals = [], {}, [], []
        for i, value in enumerate(args):
            if isinstance(value, Symbol):
                if not variadic and i >= len(inputs):
                    raise TypeError("%s(): argument %d is a Symbol but the operator takes %d "
                                    "inputs (%s)" % (op_name, i, len(inputs), ", ".join(inputs)))
                pos_syms.append(value)
            elif variadic:
                raise TypeError("%s(): positional arguments must be Symbols, got %s"
                                % (op_name, type(value).__name__))
            else:
                if i < len(inputs):
                    if value is None:
                        continue
                    raise TypeError("%s(): input '%s' must be a Symbol, got %s"
                                    % (op_name, inputs[i], type(value).__name__))
                key = params[i - len(inputs)]
                if value is not _Null:
                    keys.append(key)
                    vals.append(_attr_text(op_name, key, value))
        for key, value in kwargs.items():
            if isinstance(value, Symbol):
                if any_key:
                    kw_syms[key] = value
                    continue
                if variadic or key not in input_set:
                    raise TypeError("%s() got an unexpected Symbol argument '%s' (inputs: %s)"
                                    % (op_name, key, ", ".join(inputs)))
                kw_syms[key] = value
            elif key in input_set and value is None:
                continue
            elif key in param_set or key.startswith("__") or any_key:
                if value is not _Null and value is not None:
                    keys.append(key)
                    vals.append(_attr_text(op_name, key, value))
            else:
                raise TypeError("%s() got an unexpected keyword argument '%s' (it takes %s)"
                                % (op_name, key, ", ".join(arg_names) or "none"))
        if any_key and kw_syms:
            # Custom's inputs by name: in the order of the property class's list_arguments().
            pos_syms.extend(_custom_inputs(keys, vals, kw_syms))
            kw_syms = {}
        if variadic and "num_args" in param_set and "num_args" not in keys and not any_key:
            keys.append("num_args")
            vals.append(str(len(pos_syms)))
        for k, v in AttrScope.current.get(attr).items():
            keys.append(k)
            vals.append(str(v))
        s = Symbol(_LIB.symbol_create_atomic(handle, keys, vals))
        node_name = NameManager.current.get(name, hint)
        # Positional symbols fill the first inputs; named ones go by input name.
        names = [None] * len(pos_syms) + list(kw_syms)
        _LIB.symbol_compose(s.handle, node_name, names,
                            [x.handle for x in pos_syms] + [x.handle for x in kw_syms.values()])
        return s

    function.__name__ = op_name
    function.__qualname__ = op_name
    function.__doc__ = ("%s(%s, name=None, attr=None): symbol of nanomx operator '%s' (inputs: "
                        "%s)" % (op_name, ", ".join(arg_names), op_name,
                                 ", ".join(inputs) or "none"))
    return function


def populate():
    """Fills nanomx.symbol.op and nanomx.symbol._internal with a function per operator name."""
    _populate(_make_function, _op_handle, op, _internal)
