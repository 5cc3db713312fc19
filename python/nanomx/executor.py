"""mx.executor: a symbol bound to arrays (MXNet 1.x's Executor, same names and signatures).

Made by Symbol.simple_bind / Symbol.bind. forward() and backward() push one engine operation per
operator node (docs/symbolic.md, "Executor").
"""
import copy

import numpy as np

from .base import _LIB, MXNetError  # noqa: F401 (MXNetError: raised by the C calls)
from .ndarray.ndarray import NDArray, _new

__all__ = ["Executor"]

_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}


def _wrap_list(handles):
    return [None if h is None else _new(h) for h in handles]


def _flat_shapes(shapes):
    """The tuple-valued entries of shapes (name -> shape) as the C API takes them: the names,
    every dimension in one list, and the offsets into it at which each shape ends (after 0)."""
    names, data, idx = [], [], [0]
    for k, v in shapes.items():
        if isinstance(v, tuple):
            names.append(k)
            data.extend(v)
            idx.append(len(data))
    return names, data, idx


def _cached_dict_property(attr, list_names, arrays):
    """A read-only Executor property: the name -> array dict of self._symbol.<list_names>() and
    self.<arrays>, built on first use and kept in self.<attr> (forward() clears the outputs' one,
    as it replaces the output arrays)."""
    def get(self):
        cached = getattr(self, attr)
        if cached is None:
            cached = Executor._get_dict(getattr(self._symbol, list_names)(),
                                        getattr(self, arrays))
            setattr(self, attr, cached)
        return cached
    return property(get)


class Executor(object):
    """A symbol bound to argument, gradient and aux arrays on one context.

    Executor(handle, symbol, ctx, grad_req, group2ctx) wraps a handle from the C API, as
    MXNet's does; use Symbol.simple_bind / Symbol.bind to make one.
    """

    def __init__(self, handle, symbol, ctx, grad_req, group2ctx):
        if not isinstance(handle, int):
            raise TypeError("Handle type error")
        self.handle = handle
        self.arg_arrays = []
        self.grad_arrays = []
        self.aux_arrays = []
        self.outputs = self._get_outputs()
        self._symbol = copy.deepcopy(symbol)
        self._optimized_symbol = None
        self._arg_dict = None
        self._grad_dict = None
        self._aux_dict = None
        self._output_dict = None
        self._monitor_callback = None
        self._monitor_all = None
        self._ctx = copy.deepcopy(ctx)
        self._grad_req = copy.deepcopy(grad_req)
        self._group2ctx = copy.deepcopy(group2ctx)

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None and _LIB is not None:
            try:
                _LIB.executor_free(handle)
            except Exception:  # noqa: BLE001 (interpreter shutdown)
                pass
            self.handle = None

    @staticmethod
    def _get_dict(names, ndarrays):
        nset = set()
        for nm in names:
            if nm in nset:
                raise ValueError("Duplicate names detected, %s" % str(names))
            nset.add(nm)
        return dict(zip(names, ndarrays))

    def _get_outputs(self):
        return [_new(h) for h in _LIB.executor_outputs(self.handle)]

    def forward(self, is_train=False, **kwargs):
        """Runs the forward nodes; keyword arguments are copied into arg_dict first."""
        if len(kwargs) != 0:
            arg_dict = self.arg_dict
            for name, array in kwargs.items():
                if not isinstance(array, (NDArray, np.ndarray)):
                    raise ValueError("only accept keyword argument of NDArrays and numpy.ndarray")
                if name not in arg_dict:
                    raise TypeError("Unknown argument %s" % name)
                if arg_dict[name].shape != array.shape:
                    raise ValueError("Shape not match! Argument %s, need: %s, received: %s"
                                     % (name, str(arg_dict[name].shape), str(array.shape)))
                arg_dict[name][:] = array
        _LIB.executor_forward(self.handle, bool(is_train))
        self.outputs = self._get_outputs()
        self._output_dict = None
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Runs the backward nodes with the given head gradients (None for loss outputs)."""
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in self._symbol.list_outputs()]
        for obj in out_grads:
            if not isinstance(obj, NDArray):
                raise TypeError("inputs must be NDArray")
        _LIB.executor_backward(self.handle, [g.handle for g in out_grads], bool(is_train))

    def set_monitor_callback(self, callback, monitor_all=False):
        """Not supported by nanomx's executor: raises NotImplementedError."""
        raise NotImplementedError("Executor.set_monitor_callback is not supported by nanomx")

    @property
    def symbol(self):
        return self._symbol

    arg_dict = _cached_dict_property("_arg_dict", "list_arguments", "arg_arrays")
    grad_dict = _cached_dict_property("_grad_dict", "list_arguments", "grad_arrays")
    aux_dict = _cached_dict_property("_aux_dict", "list_auxiliary_states", "aux_arrays")
    output_dict = _cached_dict_property("_output_dict", "list_outputs", "outputs")

    def _copy_into(self, params, dict_name, allow_extra_params, unknown_message):
        """Copies each array of params (cast to the destination's dtype) into the array of the
        same name in self.<dict_name>; a name not there raises ValueError(unknown_message % name)
        unless allow_extra_params."""
        for name, array in params.items():
            # looked up here, not before the loop: empty params never build the dict
            targets = getattr(self, dict_name)
            if name in targets:
                dst = targets[name]
                array.astype(dst.dtype).copyto(dst)
            elif not allow_extra_params:
                raise ValueError(unknown_message % name)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies parameters (cast to each destination's dtype) into the bound arrays."""
        self._copy_into(arg_params, "arg_dict", allow_extra_params,
                        'Find name "%s" that is not in the arguments')
        if aux_params is None:
            return
        self._copy_into(aux_params, "aux_dict", allow_extra_params,
                        "Find name %s that is not in the auxiliary states")

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new argument shapes, sharing this one's memory where it fits."""
        names, data, idx = _flat_shapes(kwargs)
        handle, args, grads, aux = _LIB.executor_reshape(
            self.handle, bool(partial_shaping), bool(allow_up_sizing), self._ctx.device_typeid,
            self._ctx.device_id, names, data, idx)
        executor = Executor(handle, self._symbol, self._ctx, self._grad_req, self._group2ctx)
        executor.arg_arrays = _wrap_list(args)
        executor.grad_arrays = _wrap_list(grads)
        executor.aux_arrays = _wrap_list(aux)
        return executor

    def debug_str(self):
        """The bound graph (forward and backward) and MXNet's 'Total N MB allocated' lines."""
        return _LIB.executor_print(self.handle)

    # ---- nanomx only ----
    def _planned_bytes(self):
        """(bytes planned as MXNet counts them, bytes allocated) for the internal buffers."""
        planned, allocated, _ = _LIB.executor_info(self.handle)
        return planned, allocated


def _simple_bind(symbol, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                 shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
    from .context import Context
    from .ndarray.ndarray import _DTYPE_NP_TO_MX
    if not isinstance(ctx, Context):
        raise TypeError("Context type error")
    if group2ctx:
        raise ValueError("group2ctx is not supported by nanomx: one executor runs on one context")
    if shared_exec is not None:
        raise ValueError("shared_exec is not supported by nanomx: bind each executor on its own")
    if shared_buffer is not None and not isinstance(shared_buffer, dict):
        raise TypeError("shared_buffer must be a dict of str to NDArray")
    if stype_dict and any(v != "default" for v in stype_dict.values()):
        raise ValueError("only the default storage type is supported by nanomx")
    dtype_names, dtypes = [], []
    if type_dict is not None:
        for k, v in type_dict.items():
            dtype_names.append(k)
            dtypes.append(_DTYPE_NP_TO_MX[np.dtype(v).type])
    names, data, idx = _flat_shapes(kwargs)
    req_names = None
    if isinstance(grad_req, str):
        req_len, req_types = 0, [grad_req]
    elif isinstance(grad_req, list):
        if len(grad_req) == 0:
            raise RuntimeError("grad_req in simple_bind cannot be an empty list")
        req_types = list(grad_req)
        req_len = len(req_types)
    elif isinstance(grad_req, dict):
        if len(grad_req) == 0:
            raise RuntimeError("grad_req in simple_bind cannot be an empty dict")
        req_names = list(grad_req.keys())
        req_types = list(grad_req.values())
        req_len = len(req_types)
    else:
        raise TypeError("grad_req must be a str, a list or a dict")
    try:
        handle, args, grads, aux = _LIB.executor_simple_bind(
            symbol.handle, ctx.device_typeid, ctx.device_id, req_len, req_names, req_types, names,
            data, idx, dtype_names, dtypes)
    except MXNetError as e:
        error_msg = "simple_bind error. Arguments:\n"
        for k, v in kwargs.items():
            error_msg += "%s: %s\n" % (k, v)
        error_msg += "%s" % e
        raise RuntimeError(error_msg)
    executor = Executor(handle, symbol, ctx, grad_req, group2ctx)
    executor.arg_arrays = _wrap_list(args)
    executor.grad_arrays = _wrap_list(grads)
    executor.aux_arrays = _wrap_list(aux)
    if shared_buffer is not None:
        # MXNet adds the arrays it allocates for non-shared arguments to the caller's dict (it
        # would also reuse arrays from it; nanomx always allocates).
        shared = set(shared_arg_names or ())
        for name, arr in zip(symbol.list_arguments(), executor.arg_arrays):
            if name not in shared and name not in shared_buffer:
                shared_buffer[name] = arr
    return executor


def _get_ndarray_inputs(arg_key, args, arg_names, allow_missing):
    arg_handles = []
    arg_arrays = []
    if isinstance(args, list):
        if len(args) != len(arg_names):
            raise ValueError("Length of %s does not match the number of arguments" % arg_key)
        for narr in args:
            if narr is None and allow_missing:
                arg_handles.append(None)
            elif not isinstance(narr, NDArray):
                raise TypeError("Only accept list of NDArrays or dict of str to NDArray")
            else:
                arg_handles.append(narr.handle)
        arg_arrays = args
    elif isinstance(args, dict):
        for name in arg_names:
            if name in args:
                narr = args[name]
                if not isinstance(narr, NDArray):
                    raise TypeError("Only accept list of NDArrays or dict of str to NDArray")
                arg_handles.append(narr.handle)
                arg_arrays.append(narr)
            else:
                if allow_missing:
                    arg_handles.append(None)
                    arg_arrays.append(None)
                else:
                    raise ValueError("key `%s` is missing in `%s`" % (name, arg_key))
    else:
        raise TypeError("Only accept list of NDArrays or dict of str to NDArray")
    return arg_handles, arg_arrays


def _bind(symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
          shared_exec=None):
    from .context import Context
    if not isinstance(ctx, Context):
        raise TypeError("Context type error")
    if group2ctx:
        raise ValueError("group2ctx is not supported by nanomx: one executor runs on one context")
    listed_arguments = symbol.list_arguments()
    args_handle, args = _get_ndarray_inputs("args", args, listed_arguments, False)
    if args_grad is None:
        args_grad_handle = [None] * len(args)
    else:
        args_grad_handle, args_grad = _get_ndarray_inputs("args_grad", args_grad,
                                                          listed_arguments, True)
    if aux_states is None:
        aux_states = []
    aux_handle, aux_states = _get_ndarray_inputs("aux_states", aux_states,
                                                 symbol.list_auxiliary_states(), False)
    if isinstance(grad_req, str):
        if grad_req not in _GRAD_REQ_MAP:
            raise ValueError("grad_req must be in %s" % str(_GRAD_REQ_MAP))
        reqs = [_GRAD_REQ_MAP[grad_req]] * len(listed_arguments)
    elif isinstance(grad_req, list):
        reqs = [_GRAD_REQ_MAP[item] for item in grad_req]
    elif isinstance(grad_req, dict):
        reqs = [_GRAD_REQ_MAP[grad_req[name]] if name in grad_req else 0
                for name in listed_arguments]
    else:
        raise TypeError("grad_req must be a str, a list or a dict")
    handle = _LIB.executor_bind(symbol.handle, ctx.device_typeid, ctx.device_id, args_handle,
                                args_grad_handle, reqs, aux_handle)
    executor = Executor(handle, symbol, ctx, grad_req, group2ctx)
    executor.arg_arrays = args
    executor.grad_arrays = [None] * len(args) if args_grad is None else args_grad
    executor.aux_arrays = aux_states
    return executor
