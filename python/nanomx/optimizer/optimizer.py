"""MXNet 1.x's Optimizer base, registry, SGD (and its deprecated alias ccSGD), Adam and the
Updater that Module calls.

Updates run as operators, as MXNet's do: SGD on dense arrays as ``multi_sgd_update`` /
``multi_sgd_mom_update`` over groups of up to ``MXNET_OPTIMIZER_AGGREGATION_SIZE`` (4)
parameters, Adam as ``adam_update`` with its bias correction folded into the learning rate.
Every operator writes the weight in place (``out=weight``) and its state arrays too.
docs/symbolic.md gives the formulas.
"""
import math
import os
import pickle
import warnings

import numpy

from .. import ndarray as nd
from .. import profiler as _profiler
from ..ndarray import NDArray

__all__ = ["Optimizer", "register", "create", "SGD", "ccSGD", "Adam", "Updater",
           "get_updater"]


def _flatten_list(nested):
    return [item for group in nested for item in group]


class Optimizer(object):
    """The base class: learning rate (or scheduler), weight decay, gradient rescaling and
    clipping, per-parameter lr/wd multipliers, update counts.

    Multipliers: ``param_idx2name`` maps update indices to parameter names; every name not
    ending in ``_weight`` or ``_gamma`` gets wd multiplier 0 (no decay on biases), and the
    ``__lr_mult__``/``__wd_mult__`` attributes of `sym`'s arguments override.
    """

    opt_registry = {}

    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0., clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if self.lr_scheduler is not None and learning_rate is not None:
            if self.lr_scheduler.base_lr != learning_rate:
                print(UserWarning("learning rate from ``lr_scheduler`` has been overwritten by "
                                  "``learning_rate`` in optimizer."))
                self.lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise AssertionError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    @staticmethod
    def register(klass):
        """Registers an optimizer class under its lower-case name (create() finds it)."""
        if not isinstance(klass, type):
            raise AssertionError("register: %r is not a class" % (klass,))
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            warnings.warn("WARNING: New optimizer %s.%s is overriding existing optimizer %s.%s"
                          % (klass.__module__, klass.__name__,
                             Optimizer.opt_registry[name].__module__,
                             Optimizer.opt_registry[name].__name__))
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An instance of the optimizer registered as `name` (case-insensitive)."""
        if not isinstance(name, str):
            raise TypeError("create_optimizer: name must be a str, got %s" % type(name).__name__)
        if name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()](**kwargs)
        raise ValueError("Cannot find optimizer %s" % name)

    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def create_state(self, index, weight):  # noqa: ARG002 (the subclasses' signature)
        """The auxiliary state of one parameter (None: stateless)."""
        return None

    def create_state_multi_precision(self, index, weight):
        """create_state, with a float32 master copy first for float16 weights when
        multi_precision is on."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = weight.astype(numpy.float32)
            return (weight_master_copy,) + (self.create_state(index, weight_master_copy),)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          "optimizer")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Updates `weight` in place from `grad` and `state`."""
        raise NotImplementedError()

    def update_multi_precision(self, index, weight, grad, state):
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = state[0]
            original_state = state[1]
            grad32 = grad.astype(numpy.float32)
            self.update(index, weight_master_copy, grad32, original_state)
            nd.Cast(weight_master_copy, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of the "
                              "optimizer only when the LRScheduler of the optimizer is "
                              "undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):  # noqa: ARG002
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult):
        """Learning-rate multipliers by parameter name or index (the symbol's __lr_mult__
        attributes first)."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Weight-decay multipliers: 0 for every indexed name not ending in _weight/_gamma,
        then the symbol's __wd_mult__ attributes, then `args_wd_mult`."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith("_weight") or n.endswith("_gamma")):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index):
        if not isinstance(index, (list, tuple)):
            index = [index]
        for idx in index:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        lrs = [lr for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                lrs[i] *= self.param_dict[index].lr_mult
            elif index in self.lr_mult:
                lrs[i] *= self.lr_mult[index]
            elif index in self.idx2name:
                lrs[i] *= self.lr_mult.get(self.idx2name[index], 1.0)
        return lrs

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        wds = [self.wd for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                wds[i] *= self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                wds[i] *= self.wd_mult[index]
            elif index in self.idx2name:
                wds[i] *= self.wd_mult.get(self.idx2name[index], 1.0)
        return wds

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def __getstate__(self):
        ret = self.__dict__.copy()
        # param_dict holds Gluon parameters, which do not pickle.
        ret.pop("param_dict", None)
        return ret

    def __setstate__(self, state):
        self.__dict__ = state
        self.param_dict = {}


register = Optimizer.register
create = Optimizer.create_optimizer


def _check_arrays(weights, grads):
    for weight, grad in zip(weights, grads):
        if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
            raise AssertionError("optimizer update: weight and grad must be NDArrays, got %s and "
                                 "%s" % (type(weight).__name__, type(grad).__name__))


@register
class SGD(Optimizer):
    """SGD with optional momentum: ``w = (1 - lr*wd)*w - lr*clip(rescale_grad*g)``, or with
    momentum ``m = momentum*m - lr*wd*w - lr*clip(rescale_grad*g); w += m``."""

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super(SGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = weight.astype(numpy.float32)
            return (self.create_state(index, weight_master_copy), weight_master_copy)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          "SGD optimizer")
        return self.create_state(index, weight)

    def create_state(self, index, weight):  # noqa: ARG002
        if self.momentum != 0.0:
            return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)
        return None

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        if not isinstance(indices, (tuple, list)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        _check_arrays(weights, grads)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        if not multi_precision:
            # Dense arrays always take the multi-tensor operators, as in MXNet.
            if self.momentum > 0:
                nd.multi_sgd_mom_update(*_flatten_list(zip(weights, grads, states)),
                                        out=list(weights), num_weights=len(weights),
                                        lrs=tuple(lrs), wds=tuple(wds), **kwargs)
            else:
                nd.multi_sgd_update(*_flatten_list(zip(weights, grads)), out=list(weights),
                                    num_weights=len(weights), lrs=tuple(lrs), wds=tuple(wds),
                                    **kwargs)
            return
        for weight, grad, state, lr, wd in zip(weights, grads, states, lrs, wds):
            if state[0] is not None:
                nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd,
                                     **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        use_multi_precision = self.multi_precision and first.dtype == numpy.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_multi_precision)


@register
class ccSGD(SGD):
    """[DEPRECATED] Same as SGD. Left here for backward compatibility."""

    def __init__(self, *args, **kwargs):
        super(ccSGD, self).__init__(*args, **kwargs)


@register
class Adam(Optimizer):
    """Adam (Kingma and Ba): ``adam_update`` with lr scaled by
    ``sqrt(1 - beta2^t) / (1 - beta1^t)`` for the t-th update of that parameter."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super(Adam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):  # noqa: ARG002
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype))  # variance

    def update(self, index, weight, grad, state):
        _check_arrays([weight], [grad])
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        coef1 = 1. - self.beta1 ** t
        coef2 = 1. - self.beta2 ** t
        lr *= math.sqrt(coef2) / coef1
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lazy_update=self.lazy_update, lr=lr,
                       wd=wd, **kwargs)


class Updater(object):
    """``updater(index, grad, weight)`` (or lists of each): creates each index's state on first
    sight and runs the optimizer, in groups of ``optimizer.aggregate_num`` parameters of one
    dtype where the optimizer aggregates (SGD)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = index, grad, weight
        if len(indices) != len(grads) or len(indices) != len(weights):
            raise ValueError("Updater: %d indices, %d gradients and %d weights"
                             % (len(indices), len(grads), len(weights)))
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            if idx not in self.states:
                # The GPU memory profile names the state arrays as MXNet's updater does.
                with _profiler.scope("updater:optimizer_state"):
                    self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
        if self.aggregate_updates:
            type_map = {}
            for i, w, g in zip(indices, weights, grads):
                type_map.setdefault(w.dtype, []).append((i, w, g))
            n = self.optimizer.aggregate_num
            for group in type_map.values():
                idxs, ws, gs = zip(*group)
                for start in range(0, len(idxs), n):
                    states = [self.states[k] for k in idxs[start:start + n]]
                    self.optimizer.update_multi_precision(list(idxs[start:start + n]),
                                                          list(ws[start:start + n]),
                                                          list(gs[start:start + n]), states)
        else:
            for i, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(i, w, g, self.states[i])

    def sync_state_context(self, state, context):
        """The state moved to `context` (after set_states)."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states):
        """Restores what get_states pickled."""
        states = pickle.loads(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """The states (and the optimizer) pickled."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An Updater running `optimizer`."""
    return Updater(optimizer)
