"""The executor behind a Module: MXNet's DataParallelExecutorGroup reduced to one context.

It binds the symbol with per-argument gradient requests (parameters 'write' unless fixed,
data only with inputs_need_grad, labels and states never), loads batches into the
executor's input arrays, and exposes the parameter, gradient and aux arrays in
list_arguments() order, each as a one-device list as MXNet's group does.
"""
from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..context import cpu
from ..io import DataDesc
from ..ndarray import NDArray

_GRAD_REQS = ("null", "write", "add")


def _copy_into(src, dst):
    if isinstance(src, NDArray):
        if src.shape == dst.shape:
            src.copyto(dst)
        else:
            src[0:dst.shape[0]].copyto(dst)
    else:
        dst[:] = np.asarray(src)[0:dst.shape[0]]


class ExecutorGroup(object):
    """One bound executor with Module's bookkeeping."""

    def __init__(self, symbol, context, data_shapes, label_shapes, param_names, for_training,
                 inputs_need_grad, fixed_param_names=None, grad_req="write", state_names=None):
        self.symbol = symbol
        self.context = context
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.fixed_param_names = fixed_param_names or []
        self.state_names = state_names or []
        self._total_exec_bytes = 0
        data_names = [x.name for x in data_shapes]
        if not for_training:
            grad_req = "null"
        if isinstance(grad_req, str):
            if grad_req not in _GRAD_REQS:
                raise ValueError("grad_req must be one of %s, got %r" % (_GRAD_REQS, grad_req))
            self.grad_req = {}
            for k in self.arg_names:
                if k in self.param_names:
                    self.grad_req[k] = "null" if k in self.fixed_param_names else grad_req
                elif k in data_names:
                    self.grad_req[k] = grad_req if self.inputs_need_grad else "null"
                else:
                    self.grad_req[k] = "null"
        elif isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError("grad_req list has %d entries, the symbol has %d arguments"
                                 % (len(grad_req), len(self.arg_names)))
            self.grad_req = dict(zip(self.arg_names, grad_req))
        elif isinstance(grad_req, dict):
            self.grad_req = {}
            for k in self.arg_names:
                if k in self.param_names:
                    self.grad_req[k] = "null" if k in self.fixed_param_names else "write"
                elif k in data_names:
                    self.grad_req[k] = "write" if self.inputs_need_grad else "null"
                else:
                    self.grad_req[k] = "null"
            self.grad_req.update(grad_req)
        else:
            raise ValueError("grad_req must be one of str, list, tuple, or dict.")
        self.execs = []
        self.bind_exec(data_shapes, label_shapes)

    def _input_types(self, data_shapes, label_shapes):
        input_types = {x.name: x.dtype for x in data_shapes}
        attr_dict = self.symbol.attr_dict()
        for name in self.symbol.list_inputs():
            dtype = attr_dict.get(name, {}).get("__dtype__")
            if name in input_types and dtype is not None and dtype != "-1":
                input_types[name] = nd.ndarray._DTYPE_MX_TO_NP[int(dtype)]
        if label_shapes is not None:
            input_types.update({x.name: x.dtype for x in label_shapes})
        return input_types

    def bind_exec(self, data_shapes, label_shapes, reshape=False):
        """Binds (or, with reshape, reshapes) the executor for these input shapes."""
        input_shapes = dict(data_shapes)
        if label_shapes is not None:
            input_shapes.update(dict(label_shapes))
        if reshape:
            executor = self.execs[0].reshape(partial_shaping=True, allow_up_sizing=True,
                                             **input_shapes)
        else:
            executor = self.symbol.simple_bind(
                self.context, grad_req=self.grad_req,
                type_dict=self._input_types(data_shapes, label_shapes), **input_shapes)
            # Module's byte count, from the executor's "Total <N> MB allocated" line.
            try:
                self._total_exec_bytes += int(executor.debug_str().split("\n")[-3].split()[1])
            except (IndexError, ValueError):
                pass
        self.execs = [executor]
        self.data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
        self.label_shapes = None if label_shapes is None else \
            [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        self.batch_size = self.data_shapes[0].shape[
            DataDesc.get_batch_axis(self.data_shapes[0].layout)]
        arg_dict = executor.arg_dict
        self.data_arrays = [arg_dict[x.name] for x in self.data_shapes]
        self.label_arrays = None if self.label_shapes is None else \
            [arg_dict[x.name] for x in self.label_shapes]
        self.param_arrays = [[executor.arg_arrays[i]] for i, name in enumerate(self.arg_names)
                             if name in self.param_names]
        self.grad_arrays = [[executor.grad_arrays[i]] for i, name in enumerate(self.arg_names)
                            if name in self.param_names]
        self.aux_arrays = [[a] for a in executor.aux_arrays]
        data_names = [x.name for x in self.data_shapes]
        self.input_grad_arrays = [[executor.grad_arrays[self.arg_names.index(name)]]
                                  for name in data_names] if self.inputs_need_grad else []

    def reshape(self, data_shapes, label_shapes):
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def set_params(self, arg_params, aux_params, allow_extra=False):
        for texec in self.execs:
            texec.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Copies the executor's parameters into the given (CPU) dicts."""
        for name, block in zip(self.param_names, self.param_arrays):
            weight = block[0].copyto(cpu()) if len(block) == 1 else \
                sum(w.copyto(cpu()) for w in block) / len(block)
            weight.astype(arg_params[name].dtype).copyto(arg_params[name])
        for name, block in zip(self.aux_names, self.aux_arrays):
            weight = block[0].copyto(cpu()) if len(block) == 1 else \
                sum(w.copyto(cpu()) for w in block) / len(block)
            weight.astype(aux_params[name].dtype).copyto(aux_params[name])

    def forward(self, data_batch, is_train=None):
        for src, dst in zip(data_batch.data, self.data_arrays):
            _copy_into(src, dst)
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None and data_batch.label:
            for src, dst in zip(data_batch.label, self.label_arrays):
                _copy_into(src, dst)
        for texec in self.execs:
            texec.forward(is_train=is_train)

    def get_output_shapes(self):
        return [(name, out.shape) for name, out in zip(self.output_names,
                                                        self.execs[0].outputs)]

    def get_outputs(self, merge_multi_context=True):
        outputs = list(self.execs[0].outputs)
        if merge_multi_context:
            return outputs
        return [[out] for out in outputs]

    def get_states(self, merge_multi_context=True):
        states = [self.execs[0].arg_dict[name] for name in self.state_names]
        return states if merge_multi_context else [[s] for s in states]

    def set_states(self, states=None, value=None):
        if states is not None:
            for src, name in zip(states, self.state_names):
                src = src[0] if isinstance(src, (list, tuple)) else src
                src.copyto(self.execs[0].arg_dict[name])
        else:
            for name in self.state_names:
                self.execs[0].arg_dict[name][:] = value

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise AssertionError("bind with inputs_need_grad=True to get the input gradients")
        grads = [block[0] for block in self.input_grad_arrays]
        return grads if merge_multi_context else [[g] for g in grads]

    def backward(self, out_grads=None):
        if not self.for_training:
            raise AssertionError("re-bind with for_training=True to run backward")
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        for texec in self.execs:
            texec.backward(out_grads=list(out_grads))

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        if pre_sliced:
            labels = labels[0]
        labels_slice = []
        for label in labels or []:
            if label.shape[0] != self.batch_size:
                label = label[0:self.batch_size]
            labels_slice.append(label)
        label_names = [x.name for x in self.label_shapes] if self.label_shapes else []
        labels_ = OrderedDict(zip(label_names, labels_slice))
        preds = OrderedDict(zip(self.output_names, self.execs[0].outputs))
        eval_metric.update_dict(labels_, preds)

    def install_monitor(self, mon):
        for texec in self.execs:
            mon.install(texec)
