"""Hybridized execution of a HybridBlock: its graph run by nanomx's symbolic executor.

MXNet runs a hybridized block through a CachedOp. nanomx binds the block's symbol to executors
instead, one set per input signature (context, input shapes and dtypes). Inputs are copied into
arrays the executor owns; auxiliary states (BatchNorm's moving statistics) are bound as the
parameters' own arrays, so the forward moves them in place.

* Outside autograd.record() the call uses an executor bound without gradients and to the
  parameters' own arrays (no copies; the CPU executor's inference fusion applies), and returns
  copies of its outputs, since the executor overwrites its output arrays at the next forward.
* Under autograd.record() the call copies the parameters into an executor bound with gradients,
  runs its forward on the calling thread, then calls one custom operator (mx.nd.Custom, op type
  `_nanomx_gluon_cached_graph`) on the inputs, the parameters that want gradients and the
  executor's outputs. Autograd records that one node; its forward copies the outputs, its
  backward runs the executor's backward and hands the input and parameter gradients back, so
  loss.backward() reaches Parameter.grad() and the inputs' .grad. (The training executor owns
  its parameter copies because that backward runs on a custom-operator worker thread: reading
  the parameters' own arrays there would wait behind an optimizer update that itself waits for
  the node.)
* The forward state an executor keeps must survive until that backward, so each recorded call
  reserves its executor (the call's id travels as the custom operator's attribute) and a second
  recorded call of the same signature before the first one's backward binds another executor (a
  hybridized cell called for every step of a sequence holds one per step, as MXNet's CachedOp
  keeps one state per call). A reservation ends when its backward ran and another call needs
  the executor. Autograd does not tell Python when it drops a recorded node, so a call recorded
  but never differentiated keeps its executor until more than NANOMX_GLUON_PENDING_CALLS (64)
  calls wait; then the oldest one's executor is reused (with a warning), and its backward,
  should it come, fails saying so.
"""
import atexit
import itertools
import os
import threading
import time
import warnings
import weakref

import numpy as np

from .. import autograd, ndarray
from .. import operator as _operator
from ..base import MXNetError

_OP_TYPE = "_nanomx_gluon_cached_graph"

_lock = threading.RLock()
# call id -> _Call while its slot holds its forward state (the slot keeps the _Call alive, so an
# entry goes away with its slot's reservation, or with the graph when a block drops it)
_calls = weakref.WeakValueDictionary()
_call_ids = itertools.count()


_exit_hook = []


def _drain_at_exit():
    """Lets the custom-operator threads finish before the interpreter finalizes: a property
    object released by a worker thread after Python's finalization started aborts the process
    ('terminate called without an active exception')."""
    try:
        ndarray.waitall()
    except Exception:  # noqa: BLE001 (the error was reported where it happened)
        pass
    time.sleep(0.02)


def _register_exit_hook():
    if not _exit_hook:
        _exit_hook.append(atexit.register(_drain_at_exit))


def _max_pending():
    try:
        return max(1, int(os.environ.get("NANOMX_GLUON_PENDING_CALLS", "64")))
    except ValueError:
        return 64


class _Slot(object):
    """One bound executor and the call that owns its forward state (None when free)."""

    __slots__ = ("executor", "data_arrays", "param_copies", "owner", "call", "backward_done")

    def __init__(self, executor, data_arrays, param_copies):
        self.executor = executor
        self.data_arrays = data_arrays
        self.param_copies = param_copies  # (argument index, the executor's own array)
        self.owner = None
        self.call = None
        self.backward_done = False

    def load(self, inputs, args):
        """Copies the inputs (and, for a training slot, the parameters) in."""
        for dst, src in zip(self.data_arrays, inputs):
            src.copyto(dst)
        for k, dst in self.param_copies:
            args[k].copyto(dst)


class _Call(object):
    """What the custom operator of one recorded call needs: the slot and the layout."""

    def __init__(self, call_id, graph, slot, n_data, grad_args, in_shapes, in_dtypes,
                 out_shapes, out_dtypes):
        self.call_id = call_id
        self.graph = graph
        self.slot = slot
        self.n_data = n_data
        self.grad_args = grad_args  # executor argument index of each parameter input
        self.in_shapes = in_shapes
        self.in_dtypes = in_dtypes
        self.out_shapes = out_shapes
        self.out_dtypes = out_dtypes


def _free(slot):
    """Ends the reservation of `slot` (its call's backward can no longer run)."""
    if slot.owner is not None:
        _calls.pop(slot.owner, None)
    slot.owner = None
    slot.call = None
    slot.backward_done = False


class _GraphOp(_operator.CustomOp):
    """The recorded node's body: forward copies the executor's outputs; backward runs the
    executor's backward and copies the gradients out."""

    def __init__(self, call):
        super(_GraphOp, self).__init__()
        self._call = call

    def forward(self, is_train, req, in_data, out_data, aux):
        n_in = len(in_data) - len(out_data)
        for i, out in enumerate(out_data):
            self.assign(out, req[i], in_data[n_in + i])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        call = self._call
        slot = call.slot
        if slot.owner != call.call_id:
            raise MXNetError("the forward state of this hybridized call is gone: its executor "
                             "was reused by a later call of the block (after this call's first "
                             "backward, or because more than NANOMX_GLUON_PENDING_CALLS recorded "
                             "calls were waiting for their backward)")
        executor = slot.executor
        executor.backward(out_grads=list(out_grad))
        slot.backward_done = True
        grads = executor.grad_arrays
        data_index = call.graph.data_arg_index
        for i in range(call.n_data):
            g = grads[data_index[i]]
            if g is not None and req[i] != "null":
                self.assign(in_grad[i], req[i], g)
        for j, arg_index in enumerate(call.grad_args):
            k = call.n_data + j
            if req[k] != "null":
                self.assign(in_grad[k], req[k], grads[arg_index])


@_operator.register(_OP_TYPE)
class _GraphOpProp(_operator.CustomOpProp):
    """Definition of the recorded node, read from the _Call its `call_id` names."""

    def __init__(self, call_id):
        super(_GraphOpProp, self).__init__(need_top_grad=True)
        with _lock:
            call = _calls.get(int(call_id))
        if call is None:
            raise MXNetError("the forward state of hybridized call %s is gone: its executor was "
                             "reused by a later call of the block" % call_id)
        self._call = call

    def list_arguments(self):
        n = len(self._call.in_shapes)
        return ["in%d" % i for i in range(n)]

    def list_outputs(self):
        return ["out%d" % i for i in range(len(self._call.out_shapes))]

    def infer_shape(self, in_shape):
        call = self._call
        return [list(s) for s in call.in_shapes], [list(s) for s in call.out_shapes], []

    def infer_type(self, in_type):
        call = self._call
        return list(call.in_dtypes), list(call.out_dtypes), []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _GraphOp(self._call)


def _float(dtype):
    return np.issubdtype(np.dtype(dtype), np.floating)


class CachedGraph(object):
    """A block's graph with its parameters, run through executors (see the module docstring).

    `symbol`: the graph; `data_names`: the input variables in call order; `params`: name ->
    Parameter for every other argument and auxiliary state of the graph.
    """

    def __init__(self, symbol, data_names, params):
        self.symbol = symbol
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.data_names = list(data_names)
        position = {n: i for i, n in enumerate(self.arg_names)}
        missing = [n for n in self.data_names if n not in position]
        if missing:
            raise MXNetError("hybridized graph: input %s is not an argument of the graph"
                             % missing)
        self.data_arg_index = [position[n] for n in self.data_names]
        for name in self.arg_names + self.aux_names:
            if name not in params and name not in self.data_names:
                raise MXNetError("Unknown input to HybridBlock: %s" % name)
        self.params = params
        self._inference = {}      # signature -> _Slot bound without gradients
        self._training = {}       # signature -> [_Slot] bound with gradients
        self._bound_params = None

    # ---- binding ----
    def _param_arrays(self, ctx):
        args = [None if n in self.data_names else self.params[n].data(ctx)
                for n in self.arg_names]
        aux = [self.params[n].data(ctx) for n in self.aux_names]
        return args, aux

    def _check_params(self, ctx, args, aux):
        """Drops every executor when a parameter's array object (cast, reset_ctx,
        re-initialization) or gradient request changed: executors hold the arrays and
        requests they were bound with."""
        reqs = [self.params[n].grad_req for n in self.arg_names if n not in self.data_names]
        bound = self._bound_params
        if bound is not None and bound[0] == ctx and bound[3] == reqs and \
                all(a is b for a, b in zip(bound[1], args)) and \
                all(a is b for a, b in zip(bound[2], aux)):
            return
        self._inference.clear()
        self._training.clear()
        self._bound_params = (ctx, list(args), list(aux), reqs)

    def _bind(self, ctx, inputs, args, aux, for_training):
        """A slot bound without gradients (to the parameters' arrays) or, for training, with
        gradients and its own copies of the parameters that want one: the executor's backward
        then runs inside the recorded node's backward, on a worker thread, and must not read
        arrays that the caller may be writing meanwhile (an optimizer update would wait for
        the node while the node waits for that read: a deadlock)."""
        with autograd.pause():
            data_arrays = [ndarray.zeros(x.shape, ctx=ctx, dtype=x.dtype) for x in inputs]
            bind_args = list(args)
            for i, k in enumerate(self.data_arg_index):
                bind_args[k] = data_arrays[i]
            grads, reqs, param_copies = [], [], []
            for k, (name, arr) in enumerate(zip(self.arg_names, bind_args)):
                want = False
                if for_training and name not in self.data_names:
                    own = ndarray.zeros(arr.shape, ctx=ctx, dtype=arr.dtype)
                    param_copies.append((k, own))
                    bind_args[k] = own
                    want = _float(arr.dtype) and self.params[name].grad_req != "null"
                elif for_training:
                    want = _float(arr.dtype)
                grads.append(ndarray.zeros(arr.shape, ctx=ctx, dtype=arr.dtype) if want else None)
                reqs.append("write" if want else "null")
            executor = self.symbol.bind(ctx, bind_args, args_grad=grads, grad_req=reqs,
                                        aux_states=list(aux))
        return _Slot(executor, data_arrays, param_copies)

    def _acquire(self, key, ctx, inputs, args, aux):
        """A training slot for a new recorded call: a free one, else one whose backward ran
        (after waiting for the queued work, so that backward calls still in the engine's queue
        free theirs instead of a new executor being bound for each call the caller runs ahead),
        else a new one; beyond the limit of waiting calls, the oldest one's."""
        slots = self._training.setdefault(key, [])
        for attempt in range(2):
            with _lock:
                for slot in slots:
                    if slot.owner is None:
                        return slot
                done = [s for s in slots if s.backward_done]
                if done:
                    slot = min(done, key=lambda s: s.owner)
                    _free(slot)
                    return slot
            if attempt == 0 and slots:
                ndarray.waitall()
        if len(slots) >= _max_pending():
            with _lock:
                slot = min(slots, key=lambda s: s.owner)
                _free(slot)
            warnings.warn("hybridized block: more than %d recorded calls of one input signature "
                          "are waiting for their backward; the oldest call's forward state is "
                          "dropped (its backward would fail). Raise NANOMX_GLUON_PENDING_CALLS "
                          "if the calls are meant to be differentiated together."
                          % _max_pending(), stacklevel=4)
            return slot
        slot = self._bind(ctx, inputs, args, aux, True)
        slots.append(slot)
        return slot

    # ---- calling ----
    def __call__(self, inputs):
        """Runs the graph on `inputs` (NDArrays in data_names order); returns the outputs."""
        if len(inputs) != len(self.data_names):
            raise ValueError("hybridized graph takes %d inputs, got %d"
                             % (len(self.data_names), len(inputs)))
        ctx = inputs[0].context
        args, aux = self._param_arrays(ctx)
        self._check_params(ctx, args, aux)
        key = (ctx, tuple((tuple(x.shape), np.dtype(x.dtype).name) for x in inputs))
        recording = autograd.is_recording()
        is_train = autograd.is_training()
        if not recording:
            slot = self._inference.get(key)
            if slot is None:
                slot = self._inference[key] = self._bind(ctx, inputs, args, aux, False)
            with autograd.pause(train_mode=is_train):
                slot.load(inputs, args)
                outs = slot.executor.forward(is_train=is_train)
                return [o.copy() for o in outs]
        slot = self._acquire(key, ctx, inputs, args, aux)
        with autograd.pause(train_mode=is_train):
            slot.load(inputs, args)
            outs = slot.executor.forward(is_train=is_train)
        grad_args = [k for k, name in enumerate(self.arg_names)
                     if name not in self.data_names and self.params[name].grad_req != "null"
                     and _float(args[k].dtype)]
        node_inputs = list(inputs) + [args[k] for k in grad_args] + list(outs)
        call_id = next(_call_ids)
        _register_exit_hook()
        call = _Call(call_id, self, slot, len(inputs), grad_args,
                     [tuple(x.shape) for x in node_inputs],
                     [np.dtype(x.dtype).type for x in node_inputs],
                     [tuple(o.shape) for o in outs], [np.dtype(o.dtype).type for o in outs])
        with _lock:
            slot.owner = call_id
            slot.call = call
            slot.backward_done = False
            _calls[call_id] = call
        try:
            result = ndarray.Custom(*node_inputs, op_type=_OP_TYPE, call_id=str(call_id))
        except Exception:
            with _lock:
                if slot.owner == call_id:
                    _free(slot)
            raise
        if isinstance(result, ndarray.NDArray):
            result = [result]
        return list(result)
