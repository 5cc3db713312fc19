"""mx.operator: operators written in Python (MXNet 1.x's CustomOp / CustomOpProp / register).

    @mx.operator.register("MySigmoid")
    class MySigmoidProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return MySigmoid()

    y = mx.nd.Custom(x, op_type="MySigmoid")

The property class answers the definition questions (arguments, outputs, shapes, types) on
the calling thread; forward and backward run on a custom-operator worker thread, and their
arrays' operators are ordinary asynchronous calls. An exception in forward or backward is
printed and reaches the caller as MXNetError at the next wait on the outputs. docs/symbolic.md
("Custom operators") has the details.
"""
import numpy as np

from .base import _LIB
from .context import Context

__all__ = ["CustomOp", "CustomOpProp", "register"]

_REQ_NAMES = ("null", "write", "inplace", "add")


class CustomOp(object):
    """Base class of an operator's body: override forward and backward."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Writes out_data from in_data (use self.assign with req[i])."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Writes in_grad from out_grad (use self.assign with req[i])."""

    def assign(self, dst, req, src):
        """dst <- src by the request: 'null' nothing, 'write'/'inplace' copy, 'add' add."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise ValueError("invalid req %r (expected one of %s)" % (req, _REQ_NAMES))


class CustomOpProp(object):
    """Base class of an operator's definition: arguments, outputs, shapes, types, body."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        for stype in in_stype:
            assert stype == "default", "Default infer_storage_type implementation doesnt " \
                                       "allow non default stypes: found non default stype " \
                                       "'%s' for in_stype" % stype
        return (in_stype, ["default"] * len(self.list_outputs()),
                ["default"] * len(self.list_auxiliary_states()))

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return CustomOp()


def _type_codes():
    from .ndarray.ndarray import _DTYPE_NP_TO_MX, _DTYPE_MX_TO_NP
    return _DTYPE_NP_TO_MX, _DTYPE_MX_TO_NP


def _parse_context(text):
    name, _, rest = text.partition("(")
    return Context(name, int(rest.rstrip(")") or 0))


class _OpAdapter(object):
    """What the extension's callbacks call: the user's CustomOp with MXNet's argument forms."""

    def __init__(self, op):
        self._op = op

    def forward(self, is_train, req, in_data, out_data, aux):
        self._op.forward(is_train=is_train, req=[_REQ_NAMES[r] for r in req], in_data=in_data,
                         out_data=out_data, aux=aux)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self._op.backward(req=[_REQ_NAMES[r] for r in req], out_grad=out_grad, in_data=in_data,
                          out_data=out_data, in_grad=in_grad, aux=aux)


class _PropAdapter(object):
    """What the extension's callbacks call: the user's CustomOpProp with flat shape and type
    lists (arguments, outputs, auxiliary states) and integer type codes."""

    def __init__(self, prop):
        self._prop = prop

    def list_arguments(self):
        return [str(n) for n in self._prop.list_arguments()]

    def list_outputs(self):
        return [str(n) for n in self._prop.list_outputs()]

    def list_auxiliary_states(self):
        return [str(n) for n in self._prop.list_auxiliary_states()]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [int(d) for d in self._prop.declare_backward_dependency(out_grad, in_data,
                                                                        out_data)]

    def infer_shape_all(self, given):
        n_args = len(self._prop.list_arguments())
        n_out = len(self._prop.list_outputs())
        n_aux = len(self._prop.list_auxiliary_states())
        ret = self._prop.infer_shape([list(s) for s in given[:n_args]])
        if len(ret) == 2:
            ishape, oshape = ret
            ashape = []
        else:
            ishape, oshape, ashape = ret
        if len(ishape) != n_args or len(oshape) != n_out or len(ashape) != n_aux:
            raise ValueError("infer_shape must return %d input, %d output and %d auxiliary "
                             "shapes, got %d, %d and %d" % (n_args, n_out, n_aux, len(ishape),
                                                            len(oshape), len(ashape)))
        return [[int(d) for d in s] for s in list(ishape) + list(oshape) + list(ashape)]

    def infer_type_all(self, codes):
        np_to_mx, mx_to_np = _type_codes()
        n_args = len(self._prop.list_arguments())
        n_out = len(self._prop.list_outputs())
        n_aux = len(self._prop.list_auxiliary_states())
        ret = self._prop.infer_type([mx_to_np[c] for c in codes[:n_args]])
        if len(ret) == 2:
            itype, otype = ret
            atype = [itype[0]] * n_aux
        else:
            itype, otype, atype = ret
        if len(itype) != n_args or len(otype) != n_out or len(atype) != n_aux:
            raise ValueError("infer_type must return %d input, %d output and %d auxiliary "
                             "types, got %d, %d and %d" % (n_args, n_out, n_aux, len(itype),
                                                           len(otype), len(atype)))
        return [np_to_mx[np.dtype(t).type] for t in list(itype) + list(otype) + list(atype)]

    def create_operator(self, ctx, shapes, dtypes):
        op = self._prop.create_operator(_parse_context(ctx), [list(s) for s in shapes],
                                        list(dtypes))
        if not isinstance(op, CustomOp):
            raise TypeError("create_operator must return a CustomOp, got %s"
                            % type(op).__name__)
        return _OpAdapter(op)


_registry = {}


def register(reg_name):
    """Class decorator: registers a CustomOpProp subclass as custom operator `reg_name`."""
    def do_register(prop_cls):
        def factory(op_type, kwargs):
            return _PropAdapter(prop_cls(**kwargs))
        _LIB.custom_op_register(reg_name, factory)
        _registry[reg_name] = prop_cls
        return prop_cls
    return do_register


register("custom_op")(CustomOpProp)
