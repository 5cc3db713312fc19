"""gluon.Trainer: applies an optimizer to a set of Parameters (MXNet 1.9.1's Trainer).

step(batch_size) = allreduce_grads() (sums each gradient across the parameter's contexts
through a KVStore when there are several) + update(batch_size) (the optimizer with
rescale_grad = optimizer's rescale_grad / batch_size, one Updater per context). With a single
context no KVStore is made ('device'/'local' with one device need none, as in MXNet), so the
update runs directly on the parameter arrays.
"""
from .. import optimizer as opt
from ..model import _create_kvstore
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


class Trainer(object):
    """Trainer(params, optimizer, optimizer_params=None, kvstore='device',
    compression_params=None, update_on_kvstore=None).

    `params`: a ParameterDict (sorted by name, as MXNet) or a list of Parameters, all
    initialized on the same contexts. `optimizer`: a name for mx.optimizer.create (with
    `optimizer_params`) or an Optimizer instance.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[key] for key in sorted(list(params.keys()))]
        if not isinstance(params, (list, tuple)):
            raise ValueError("First argument must be a list or dict of Parameters, got %s."
                             % type(params))
        self._params = []
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError("First argument must be a list or dict of Parameters, got list "
                                 "of %s." % type(param))
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params if optimizer_params else {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = []
        self._reset_kvstore()

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            assert contexts is None or contexts == ctx, \
                "All Parameters must be initialized on the same set of contexts, but Parameter " \
                "%s is initialized on %s while previous Parameters are initialized on %s." % (
                    param.name, str(ctx), str(contexts))
            contexts = ctx
        return contexts if contexts is not None else []

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            assert not optimizer_params, \
                "optimizer_params must be None if optimizer is an instance of Optimizer " \
                "instead of str"
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    def _init_params(self):
        """Initializes the store's value of each parameter (and broadcasts it to every
        context); parameters still waiting for deferred initialization stay pending."""
        assert self._kv_initialized, \
            "Cannot initialize parameters in KVStore when KVStore is not initialized."
        pending = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    pending.append(param)
                else:
                    arrays = param._check_and_get(param._data, list)
                    idx = self._param2idx[param.name]
                    self._kvstore.broadcast(idx, arrays[0], arrays)
        self._params_to_init = pending

    def _reset_kvstore(self):
        if self._kvstore and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        config = self._kvstore_params
        arg_arrays = {}
        for param in self._params:
            if not param._deferred_init:
                arg_arrays[param.name] = param.data(self._contexts[0])
        kvstore, update_on_kvstore = _create_kvstore(config["kvstore"], len(self._contexts),
                                                     arg_arrays)
        self._distributed = "dist" in kvstore.type if kvstore else False
        if self._distributed and "async" in kvstore.type:
            update_on_kvstore = True
            if config["update_on_kvstore"] is False:
                raise ValueError("Please set update_on_kvstore=True when training in async "
                                 "mode.")
        if config["update_on_kvstore"] is not None:
            update_on_kvstore = config["update_on_kvstore"]
        if kvstore and update_on_kvstore and not kvstore.is_capable("optimizer"):
            if config["update_on_kvstore"]:
                raise ValueError("Please set update_on_kvstore=False when training with {}"
                                 .format(type(kvstore)))
            update_on_kvstore = False
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _ensure_kvstore(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    @property
    def learning_rate(self):
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate can be "
                              "accessed.")
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        if isinstance(self._optimizer, opt.Optimizer):
            return self._optimizer
        raise UserWarning("Optimizer has not been initialized yet")

    def set_learning_rate(self, lr):
        """Sets the optimizer's learning rate (refused while an lr_scheduler drives it)."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate is "
                              "mutated.")
        self._optimizer.set_learning_rate(lr)

    def _check_and_rescale_grad(self, scale):
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning("Possible change in the `batch_size` from previous `step` "
                                  "detected. Optimizer gradient normalizing factor will not "
                                  "change w.r.t new batch_size when update_on_kvstore=True and "
                                  "when distributed kvstore is used.")
        self._optimizer.rescale_grad = scale

    def step(self, batch_size, ignore_stale_grad=False):
        """One update of every parameter from its gradient, normalized by 1/batch_size."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._ensure_kvstore()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sums each gradient over the contexts (for gradient manipulation before update)."""
        self._ensure_kvstore()
        assert not (self._kvstore and self._update_on_kvstore), \
            "allreduce_grads() when parameters are updated on kvstore is not supported. Try " \
            "setting `update_on_kvstore` to False when creating trainer."
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grads = param.list_grad()
            if self._update_on_kvstore:
                self._kvstore.pushpull(i, grads, out=param.list_data(), priority=-i)
            else:
                self._kvstore.pushpull(i, grads, priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """The optimizer step alone (after allreduce_grads)."""
        self._ensure_kvstore()
        assert not (self._kvstore and self._update_on_kvstore), \
            "update() when parameters are updated on kvstore is not supported. Try setting " \
            "`update_on_kvstore` to False when creating trainer."
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        del ignore_stale_grad  # nanomx does not track gradient freshness (see mxnet-compat)
        if self._kvstore and self._update_on_kvstore:
            return
        updates = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            for upd, arr, grad in zip(updates, param.list_data(), param.list_grad()):
                upd.append((i, grad, arr))
        for updater, upd in zip(self._updaters, updates):
            if upd:
                idx, grads, weights = zip(*upd)
                updater(list(idx), list(grads), list(weights))

    def save_states(self, fname):
        """Writes the optimizer state (and the optimizer) to `fname`."""
        assert self._optimizer is not None
        self._ensure_kvstore()
        if self._update_on_kvstore:
            assert not self._params_to_init, \
                "Cannot save trainer states when some parameters are not yet initialized in " \
                "kvstore."
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Reads what save_states wrote (the optimizer included)."""
        self._ensure_kvstore()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: param for i, param in enumerate(self._params)}


