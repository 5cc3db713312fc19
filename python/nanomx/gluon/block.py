"""Gluon blocks: Block, HybridBlock and SymbolBlock (MXNet 1.9.1's gluon.block, 1.x API).

A Block owns a prefix (`dense0_`), a ParameterDict named with it and its child blocks (any
Block assigned as an attribute). A HybridBlock writes hybrid_forward(F, x, *args, **params)
once for both mx.nd (F is the ndarray module, params are NDArrays) and mx.sym (F is the symbol
module, params are Variables); hybridize() makes later calls build the symbol once and run it
through nanomx's executor (_cached_graph.py), autograd included.
"""
import copy
import re
import threading
import warnings
from collections import OrderedDict

import numpy as np

from .. import name as _name
from .. import ndarray, symbol
from .. import initializer
from ..ndarray import NDArray
from ..symbol import Symbol
from ._cached_graph import CachedGraph
from .parameter import (DeferredInitializationError, Parameter, ParameterDict,
                        _params_by_object)
from .utils import (HookHandle, _brief_print_list, _flatten, _gather_type_ctx_info, _indent,
                    _regroup)

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


class _BlockScope(object):
    """The `with block.name_scope():` scope: children created inside get the block's prefix
    plus a per-parent counter (`dense0_`, `dense1_`), and symbols get the prefix too."""

    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """The prefix and ParameterDict of a new block, from the current scope."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _name.NameManager.current.get(None, hint) + "_"
            if params is None:
                params = ParameterDict(prefix)
            else:
                params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = "%s%d_" % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(ptype, value, trace)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


# ---- Block ------------------------------------------------------------------------------------
class Block(object):
    """Base class of all layers and models: override forward(*args) (NDArrays in, out).

    Children assigned as attributes are registered (their parameters appear in
    collect_params()); create them inside `with self.name_scope():` so that their prefixes
    nest under this block's (`model0_dense0_`).
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        modstr = "\n".join(["  ({key}): {block}".format(key=key, block=_indent(repr(block), 2))
                            for key, block in self.__dict__.items() if isinstance(block, Block)])
        return "{name}(\n{modstr}\n)".format(name=self.__class__.__name__, modstr=modstr)

    def __setattr__(self, name, value):
        """Registers Blocks and Parameters assigned as attributes."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError("Changing attribute type for {name} from {type1} to {type2}"
                                "is not allowed.".format(name=name, type1=type(existing),
                                                         type2=type(value)))
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            assert name not in self._reg_params, \
                "Overriding Parameter attribute %s is not allowed. If you want to share " \
                "parameters between blocks, please set 'params' at Block construction " \
                "instead." % name
            self._reg_params[name] = value
        super(Block, self).__setattr__(name, value)

    def _check_container_with_block(self):
        children = set(self._children.values())

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(e) for e in data)
            if isinstance(data, dict):
                return any(unregistered(v) for v in data.values())
            if isinstance(data, Block):
                return data not in children
            return False

        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__")
                                                            or k == "_children"):
                if unregistered(v):
                    warnings.warn('"{name}" is an unregistered container with Blocks. Note that '
                                  "Blocks inside the list, tuple or dict will not be registered "
                                  "automatically. Make sure to register them using "
                                  "register_child() or switching to "
                                  "nn.Sequential/nn.HybridSequential instead. ".format(
                                      name=self.__class__.__name__ + "." + k), stacklevel=3)

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        return self._prefix

    @property
    def name(self):
        return self._name

    def name_scope(self):
        """`with self.name_scope():` around creating children (see the class docstring)."""
        return self._scope

    @property
    def params(self):
        """This block's own ParameterDict (children's parameters are not in it)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this block's and all descendants' parameters; `select` keeps the
        names a regular expression matches (re.match, e.g. '.*weight|.*bias')."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: v for n, v in self.params.items() if pattern.match(n)})
        for cld in self._children.values():
            ret.update(cld.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=""):
        """Parameters by structural name: attribute names joined with '.' ('0.weight',
        'features.3.bias'), what save_parameters writes."""
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename, deduplicate=False):
        """Saves the parameters under their structural names (mx.nd.save format); with
        deduplicate a shared parameter is written once."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse = {v: k for k, v in params.items()}
            params = {v: k for k, v in reverse.items()}
        ndarray.save(filename, {key: val._reduce() for key, val in params.items()})

    def save_params(self, filename):
        """Deprecated: saves collect_params() with this block's prefix stripped."""
        warnings.warn("save_params is deprecated. Please use save_parameters. Note that if you "
                      "want load from SymbolBlock later, please use export instead.")
        try:
            self.collect_params().save(filename, strip_prefix=self.prefix)
        except ValueError as e:
            raise ValueError("%s\nsave_params is deprecated. Using save_parameters may resolve "
                             "this error." % e)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Loads a file written by save_parameters (or, when no name has a '.', by the
        legacy save_params / ParameterDict.save with this block's prefix)."""
        loaded = ndarray.load(filename)
        if not isinstance(loaded, dict):
            raise ValueError("load_parameters: '%s' holds a list of arrays, not named parameters"
                             % filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in i for i in loaded.keys()):
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            params_inv = _params_by_object(params)
            for name, param in params.items():
                assert any(p in loaded for p in params_inv[param]), \
                    "Parameter '%s' is missing in file '%s', which contains parameters: %s. " \
                    "Set allow_missing=True to ignore missing parameters." % (
                        name, filename, _brief_print_list(loaded.keys()))
        for name in loaded:
            if not ignore_extra and name not in params:
                raise ValueError("Parameter '%s' loaded from file '%s' is not present in "
                                 "ParameterDict, which contains parameters %s. Set "
                                 "ignore_extra=True to ignore. " % (
                                     name, filename, _brief_print_list(self._params.keys())))
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype,
                                        dtype_source=dtype_source)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated: load_parameters."""
        warnings.warn("load_params is deprecated. Please use load_parameters.")
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def register_child(self, block, name=None):
        """Registers `block` as a child (attribute assignment does this)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """hook(block, inputs) runs before forward; returns a HookHandle (detach())."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """hook(block, inputs, outputs) runs after forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """Calls fn(block) on every descendant, then on self; returns self."""
        for cld in self._children.values():
            cld.apply(fn)
        fn(self)
        return self

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """collect_params().initialize(...): `init` is the default for parameters without
        their own initializer."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Hybridizes the HybridBlock descendants (a plain Block itself stays imperative)."""
        for cld in self._children.values():
            cld.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Casts every parameter to `dtype`."""
        for child in self._children.values():
            child.cast(dtype)
        for _, param in self.params.items():
            param.cast(dtype)

    def zero_grad(self):
        """Sets the gradients of all parameters to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Moves all parameters to `ctx`."""
        self.collect_params().reset_ctx(ctx)

    def __call__(self, *args):
        """Runs the pre-hooks, forward(*args), then the hooks."""
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args)
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args):
        """Override: the computation on NDArrays."""
        raise NotImplementedError

    def register_op_hook(self, callback, monitor_all=False):
        """Not supported: nanomx's executor has no monitor callback."""
        raise NotImplementedError("register_op_hook is not supported by nanomx (the executor "
                                  "has no monitor callback)")

    def summary(self, *inputs):
        """Prints each layer's output shape and parameter count for one forward of
        `inputs` (the block must be initialized and not hybridized)."""
        summary = OrderedDict()
        seen = set()
        hooks = []

        def shape_str(args):
            if isinstance(args, NDArray):
                return str(args.shape)
            if isinstance(args, (list, tuple)):
                return ", ".join(shape_str(a) for a in args)
            return str(args)

        def register(block):
            assert not isinstance(block, HybridBlock) or not block._active, \
                '"{}" must not be hybridized to print summary.'.format(block.name)

            def hook(block, _, outputs):
                key = "%s-%i" % (block.__class__.__name__, len(summary))
                entry = summary[key] = OrderedDict()
                entry["output_shape"] = shape_str(outputs)
                n = trainable = shared = 0
                for p in block.params.values():
                    size = p.data().size
                    n += size
                    trainable += 0 if p.grad_req == "null" else size
                    if p in seen:
                        shared += size
                    else:
                        seen.add(p)
                entry["n_params"], entry["trainable"], entry["shared"] = n, trainable, shared

            if not type(block).__name__ in ("Sequential", "HybridSequential"):
                hooks.append(block.register_forward_hook(hook))

        summary["Input"] = OrderedDict(output_shape=shape_str(inputs), n_params=0, trainable=0,
                                       shared=0)
        try:
            self.apply(register)
            self(*inputs)
            line = "{:>20}  {:>42} {:>15}"
            print("-" * 80)
            print(line.format("Layer (type)", "Output Shape", "Param #"))
            print("=" * 80)
            total = trainable = shared = 0
            for layer, entry in summary.items():
                print(line.format(layer, str(entry["output_shape"]), entry["n_params"]))
                total += entry["n_params"]
                trainable += entry["trainable"]
                shared += entry["shared"]
            print("=" * 80)
            print("Parameters in forward computation graph, duplicate included")
            print("   Total params: " + str(total))
            print("   Trainable params: " + str(trainable))
            print("   Non-trainable params: " + str(total - trainable))
            print("Shared params in forward computation graph: " + str(shared))
            print("Unique parameters in model: " + str(total - shared))
            print("-" * 80)
        finally:
            for h in hooks:
                h.detach()


# ---- HybridBlock ------------------------------------------------------------------------------
class HybridBlock(Block):
    """A Block whose computation, hybrid_forward(F, x, *args, **params), works on both mx.nd
    and mx.sym, so that hybridize() can run it as one graph (see the module docstring)."""

    def __init__(self, prefix=None, params=None):
        super(HybridBlock, self).__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []

    def __setattr__(self, name, value):
        super(HybridBlock, self).__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def _get_graph(self, *args):
        """(input variables, output symbol) of hybrid_forward on symbols, built once: one
        input is 'data', several are 'data0', 'data1', ..."""
        if not self._cached_graph:
            flat_args, self._in_format = _flatten(args, "input")
            real = sum(a is not None for a in flat_args)
            if real == 0:
                raise ValueError("All args are None and we do not support such a case. Received "
                                 "args={}".format(args))
            flat_inputs, sym_inputs = [], []
            for a in flat_args:
                if a is None:
                    flat_inputs.append(None)
                    continue
                var = symbol.var("data%d" % len(sym_inputs) if real > 1 else "data")
                flat_inputs.append(var)
                sym_inputs.append(var)
            grouped = _regroup(flat_inputs, self._in_format)
            params = {i: j.var() for i, j in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(symbol, *grouped, **params)
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = sym_inputs, (out[0] if len(out) == 1 else symbol.Group(out))
        return self._cached_graph

    def _build_cache(self, *args):
        data, out = self._get_graph(*args)
        data_names = [d.name for d in data]
        params = self.collect_params()
        expected = set(out.list_inputs())
        unused_data = [i for i, n in enumerate(data_names) if n not in expected]
        if unused_data:
            warnings.warn("The %s input to HybridBlock is not used by any computation. Is this "
                          "intended?" % ", ".join("%d-th" % i for i in unused_data), stacklevel=4)
        unused = [n for n in params.keys() if n not in expected]
        if unused:
            warnings.warn("Parameter %s is not used by any computation. Is this intended?"
                          % ", ".join(unused), stacklevel=4)
        for name in expected:
            assert name in params or name in data_names, "Unknown input to HybridBlock: %s" % name
        input_names = out.list_inputs()
        try:
            for name in input_names:
                if name in params:
                    params[name].data()
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            for name in input_names:  # in the graph's order, as MXNet
                if name in params:
                    params[name]._finish_deferred_init()
        used = {n: params[n] for n in expected if n in params}
        self._cached_op_args = [(True, data_names.index(n)) if n in data_names else (False, used[n])
                                for n in input_names]
        self._cached_op = CachedGraph(out, data_names, used)

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as e:
            raise ValueError("Deferred initialization failed because shape cannot be inferred. "
                             "{}".format(e))

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            self._build_cache(*args)
        flat, fmt = _flatten(args, "input")
        if fmt != self._in_format:
            raise ValueError("The argument structure of HybridBlock does not match the cached "
                             "version. Stored format = {}, input format = {}".format(
                                 self._in_format, fmt))
        inputs = [a for a in flat if a is not None]
        for p in self._cached_op.params.values():
            if p._deferred_init:
                p._finish_deferred_init()
        out = self._cached_op(inputs)
        return _regroup(out, self._out_format)

    def optimize_for(self, x, *args, backend=None, **kwargs):
        """Not supported: nanomx has no subgraph backends (its CPU executor fuses
        Convolution/BatchNorm/ReLU on its own when bound without gradients)."""
        raise NotImplementedError("optimize_for (subgraph backend %r) is not supported by nanomx"
                                  % (backend,))

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError("Children of HybridBlock must also be HybridBlock, but %s has type "
                             "%s. If you are using Sequential, please try HybridSequential "
                             "instead." % (str(block), str(type(block))))
        super(HybridBlock, self).register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs):
        """Turns hybrid execution on (or off) for this block and its descendants.
        static_alloc / static_shape / inline_limit / bulk sizes are accepted and kept: nanomx's
        executors always keep their memory per input signature. A backend is refused."""
        if backend is not None:
            raise NotImplementedError("hybridize(backend=%r): subgraph backends are not "
                                      "supported by nanomx" % (backend,))
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape),
                       ("inline_limit", inline_limit)]
        if clear:
            self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn('"{block}" is being hybridized while still having forward hook/'
                          'pre-hook. If "{block}" is a child of HybridBlock, the hooks will not '
                          'take effect.'.format(block=self))
        super(HybridBlock, self).hybridize(active, static_alloc=static_alloc,
                                           static_shape=static_shape, inline_limit=inline_limit,
                                           forward_bulk_size=forward_bulk_size,
                                           backward_bulk_size=backward_bulk_size, **kwargs)

    def cast(self, dtype):
        self._clear_cached_op()
        super(HybridBlock, self).cast(dtype)

    def _infer_attrs(self, infer_fn, attr, *args):
        inputs, out = self._get_graph(*args)
        flat, _ = _flatten(args, "input")
        flat = [a for a in flat if a is not None]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            arg_attrs, _, aux_attrs = getattr(out, infer_fn)(
                **{i.name: getattr(j, attr) for i, j in zip(inputs, flat)})
            if arg_attrs is None:
                raise ValueError(str(w[0].message) if w else "%s failed" % infer_fn)
        sdict = dict(zip(out.list_arguments(), arg_attrs))
        sdict.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in sdict:
                setattr(p, attr, sdict[p.name])

    def infer_shape(self, *args):
        """Completes the parameters' shapes from the inputs' (through the graph)."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args):
        """Sets the parameters' dtypes from the inputs' (through the graph)."""
        self._infer_attrs("infer_type", "dtype", *args)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Writes `path-symbol.json` and `path-%04d.params` (arg:/aux: names), what
        SymbolBlock.imports and Module load. Needs one hybridized forward first."""
        if not self._cached_graph:
            raise RuntimeError("Please first call block.hybridize() and then run forward with "
                               "this block at least once before calling export.")
        sym = self._cached_graph[1]
        sym.save("%s-symbol.json" % path, remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        params = self._cached_op_args or [(False, p) for p in self.collect_params().values()]
        for is_arg, param in params:
            if is_arg:
                continue
            if param.name in arg_names:
                arg_dict["arg:%s" % param.name] = param._reduce()
            elif param.name in aux_names:
                arg_dict["aux:%s" % param.name] = param._reduce()
            else:
                warnings.warn('Parameter "{name}" is not found in the graph. '.format(
                    name=param.name), stacklevel=3)
        ndarray.save("%s-%04d.params" % (path, epoch), arg_dict)

    def forward(self, x, *args):
        """Runs hybrid_forward with mx.nd (or the cached graph when hybridized) on NDArrays,
        or builds the symbol on Symbols."""
        has_symbol, has_ndarray, ctx_set, first_ctx = _gather_type_ctx_info([x] + list(args))
        if has_symbol and has_ndarray:
            raise ValueError("In HybridBlock, we do not support mixed NDArrays and Symbols types "
                             "for the input. Please check the type of the args.\n")
        if not has_symbol and not has_ndarray:
            raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the "
                             "input. Please check the type of the args.\n")
        if has_ndarray:
            ctx = first_ctx
            if self._active:
                if len(ctx_set) > 1:
                    raise ValueError("Find multiple contexts in the input, After hybridized, the "
                                     "HybridBlock only supports one input context. You can print "
                                     "the ele.ctx in the input arguments to inspect their "
                                     "contexts. Find all contexts = {}".format(ctx_set))
                with ctx:
                    return self._call_cached_op(x, *args)
            with ctx:
                try:
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for _, v in self.params.items():
                        v._finish_deferred_init()
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                return self.hybrid_forward(ndarray, x, *args, **params)
        params = {i: j.var() for i, j in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override: the computation with F (mx.nd or mx.sym) and parameters by name."""
        raise NotImplementedError


# ---- SymbolBlock ------------------------------------------------------------------------------
def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < len(prefix) and i < len(name) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


def _infer_param_types(in_params, out_params, arg_params, aux_params, default_dtype=np.float32):
    """The dtypes of the graph's arguments and auxiliary states, inferred from the input
    variables' __dtype__ when they all have one, else `default_dtype`."""
    arg_types = aux_types = None
    known = {}
    for p in in_params:
        t = p.attr("__dtype__")
        if t is None:
            known = None
            break
        known[p.name] = p.infer_type()[0][0]
    if known:
        try:
            arg_types, _, aux_types = out_params.infer_type(**known)
        except Exception:  # noqa: BLE001 (MXNet falls back to the default on any failure)
            arg_types = aux_types = None
    if arg_types is None or len(arg_types) != len(arg_params):
        arg_types = [default_dtype] * len(arg_params)
    if aux_types is None or len(aux_types) != len(aux_params):
        aux_types = [default_dtype] * len(aux_params)
    return arg_types, aux_types


class SymbolBlock(HybridBlock):
    """A block running a given symbol: `inputs` are its input variables, every other argument
    and auxiliary state becomes a parameter (taken from `params` when it has one of that
    name). Used for pretrained graphs and exported models (imports())."""

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock from an exported `*-symbol.json` (and its `*.params`)."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(i, dtype=np.float32) for i in input_names]
        else:
            inputs = [symbol.var(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                      cast_dtype=True, dtype_source="saved")
        return ret

    def __repr__(self):
        return "{name}(\n{block} : {nin} -> {nout}\n)".format(
            name=self.__class__.__name__, block=self._cached_graph[1],
            nin=len(self._cached_graph[0]), nout=len(self._cached_graph[1].list_outputs()))

    def __init__(self, outputs, inputs, params=None):
        super(SymbolBlock, self).__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        input_names = set()
        for i in syms:
            assert len(i.get_internals().list_outputs()) == 1, \
                "Input symbols must be variable, but %s is an output of operators" % str(i)
            input_names.add(i.name)
        for i in out:
            for j in i.get_internals():
                assert j.attr("__storage_type__") not in ("1", "2"), \
                    "SymbolBlock doesn't support Parameter '%s' because its storage type is " \
                    "not 'default'." % j.name
        out = symbol.Group(out) if len(out) > 1 else out[0]
        arg_params = out.list_arguments()
        aux_params = out.list_auxiliary_states()
        arg_types, aux_types = _infer_param_types(syms, out, arg_params, aux_params)
        for i, arg in enumerate(arg_params):
            if arg not in input_names:
                self.params.get(arg, allow_deferred_init=True, dtype=arg_types[i])
        for i, aux in enumerate(aux_params):
            if aux not in input_names:
                self.params.get(aux, grad_req="null", allow_deferred_init=True,
                                dtype=aux_types[i])
        self._cached_graph = syms, out
        len_prefix = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[len_prefix:]: val for key, val in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        assert isinstance(x, Symbol), \
            "HybridBlock requires the first argument to forward be either Symbol or NDArray, " \
            "but got %s" % type(x)
        flat, in_fmt = _flatten([x] + list(args), "input")
        assert in_fmt == self._in_format, "Invalid input format"
        ret = copy.copy(self._cached_graph[1])
        ret._compose(**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)

    def _clear_cached_op(self):
        tmp = self._cached_graph
        super(SymbolBlock, self)._clear_cached_op()
        self._cached_graph = tmp

    def cast(self, dtype):
        self._clear_cached_op()
        super(SymbolBlock, self).cast(dtype)
        if np.dtype(dtype).name == "float16":
            # BatchNorm's parameters and statistics stay float32, as MXNet keeps them.
            names = self._cached_graph[1].get_internals().list_inputs()
            for node in names:
                for var_name, stats in (("running_var", "running_mean"),
                                        ("moving_var", "moving_mean")):
                    if node.endswith(var_name):
                        prefix = node[:-len(var_name)]
                        sibs = [prefix + t for t in (stats, "gamma", "beta")]
                        if all(p in names for p in sibs):
                            for p in [node] + sibs:
                                self.params.get(p).cast("float32")

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError

    def reset_ctx(self, ctx):
        for p in self.collect_params().values():
            p.reset_ctx(ctx)
