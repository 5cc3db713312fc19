"""BaseModule: the training and inference loops (fit, score, predict, iter_predict,
forward_backward) shared by modules, as MXNet 1.x's base_module.py."""
import logging
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..initializer import Uniform
from ..io import DataBatch, DataIter
from ..model import BatchEndParam


def _as_list(obj):
    return obj if isinstance(obj, list) else [obj]


def _call_batch_end(callbacks, epoch, nbatch, eval_metric, locals_):
    """Calls each of callbacks (one or a list) with one BatchEndParam, as MXNet's loops do."""
    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals_)
    for callback in _as_list(callbacks):
        callback(params)


def _check_input_names(symbol, names, typename, throw):
    """Each name must be an argument of symbol: ValueError (or a warning) listing the
    non-parameter arguments otherwise."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [arg for arg in args if not arg.endswith("_weight")
                      and not arg.endswith("_bias") and not arg.endswith("_gamma")
                      and not arg.endswith("_beta")]
        msg = "\033[91mYou created Module with Module(..., %s_names=%s) but input with name " \
              "'%s' is not found in symbol.list_arguments(). Did you mean one of:\n\t%s\033[0m" \
              % (typename, str(names), name, "\n\t".join(candidates))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _check_names_match(data_names, data_shapes, name, throw):
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = "Data provided by %s_shapes don't match names specified by %s_names (%s vs. %s)" \
              % (name, name, str(data_shapes), str(data_names))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """DataDescs for the shapes, names checked (data: error; label: warning)."""
    from ..io import DataDesc
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule(object):
    """The state flags (binded, for_training, inputs_need_grad, params_initialized,
    optimizer_initialized) and the loops written against the abstract methods."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ---- high level -----------------------------------------------------------------------
    def forward_backward(self, data_batch):
        """forward(is_train=True) then backward()."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Runs the metric over eval_data (inference forward); returns get_name_value()."""
        assert self.binded and self.params_initialized
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in self._forward_batches(eval_data, num_batch, sparse_row_id_fn):
            self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                _call_batch_end(batch_end_callback, epoch, nbatch, eval_metric, locals())
            actual_num_batch += 1
        if score_end_callback:
            _call_batch_end(score_end_callback, epoch, actual_num_batch, eval_metric, locals())
        return eval_metric.get_name_value()

    def _forward_batches(self, eval_data, num_batch, sparse_row_id_fn):
        """Yields (index, batch) for the first num_batch batches of eval_data (all of them when
        None), each once prepare()d and run through an inference forward."""
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                return
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            yield nbatch, eval_batch

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields (outputs without the padding, batch index, batch) per batch."""
        assert self.binded and self.params_initialized
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in self._forward_batches(eval_data, num_batch, sparse_row_id_fn):
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield (outputs, nbatch, eval_batch)

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Outputs for an NDArray / numpy batch (output 0) or for every batch of a DataIter
        (padding removed, concatenated per output when merge_batches)."""
        assert self.binded and self.params_initialized
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        if reset:
            eval_data.reset()
        output_list = []
        for _, eval_batch in self._forward_batches(eval_data, num_batch, sparse_row_id_fn):
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad].copy() for out in self.get_outputs()]
            output_list.append(outputs)
        if not output_list:
            return output_list
        if merge_batches:
            num_outputs = len(output_list[0])
            for out in output_list:
                assert len(out) == num_outputs, \
                    "Cannot merge batches, as num of outputs is not the same in mini-batches. " \
                    "Maybe bucketing is used?"
            merged = [nd.concatenate([out[i] for out in output_list])
                      for i in range(num_outputs)]
            if num_outputs == 1 and not always_output_list:
                return merged[0]
            return merged
        return output_list

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Trains for epochs [begin_epoch, num_epoch): bind, init_params, init_optimizer,
        then per batch forward_backward, update, update_metric and the callbacks; logs
        Train-<metric> and Time cost per epoch, scores eval_data, resets train_data."""
        assert num_epoch is not None, "please specify number of epochs"
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    _call_batch_end(batch_end_callback, epoch, nbatch, eval_metric, locals())
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            toc = time.time()
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, (toc - tic))
            arg_params_, aux_params_ = self.get_params()
            self.set_params(arg_params_, aux_params_)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params_, aux_params_)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # ---- symbol and parameters --------------------------------------------------------------
    @property
    def symbol(self):
        return self._symbol

    def save_params(self, fname):
        """mx.nd.save of 'arg:<name>' and 'aux:<name>' arrays."""
        arg_params, aux_params = self.get_params()
        save_dict = {("arg:%s" % k): v.as_in_context(_cpu()) for k, v in arg_params.items()}
        save_dict.update({("aux:%s" % k): v.as_in_context(_cpu())
                          for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname):
        """set_params from a file save_params wrote."""
        save_dict = nd.load(fname)
        arg_params = {}
        aux_params = {}
        for k, value in save_dict.items():
            arg_type, _, name = k.partition(":")
            if arg_type == "arg":
                arg_params[name] = value
            elif arg_type == "aux":
                aux_params[name] = value
            else:
                raise ValueError("Invalid param file " + fname)
        self.set_params(arg_params, aux_params)

    def prepare(self, data_batch, sparse_row_id_fn=None):  # noqa: ARG002
        """Nothing to prepare for dense, single-context modules."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    def install_monitor(self, mon):
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)


def _cpu():
    from ..context import cpu
    return cpu()
