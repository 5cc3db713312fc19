"""Symbolic checks for mx.test_utils: simple_forward, numeric_grad, check_numeric_gradient,
check_symbolic_forward, check_symbolic_backward, check_speed, check_consistency and
check_gluon_hybridize_consistency. Private: nanomx.test_utils re-exports every public name
here; import them from there.

Sparse gradient storage types raise NotImplementedError; check_consistency drops contexts
whose device is not present (a GPU in a CPU-only process) and says so.
"""
import logging
import sys
import time
import traceback
from collections import OrderedDict

import numpy as np

from .ndarray import NDArray, array
from .symbol import Symbol
# test_utils defines these before it imports this module (at its end).
from .test_utils import (_SPARSE_REFUSED, _to_numpy, assert_almost_equal, default_context,
                         default_dtype, default_numeric_eps, get_tolerance, get_tols)

mx = sys.modules[__name__.rpartition(".")[0]]


# ---- symbolic checks ----
def _np_to_nd(value, ctx, dtype):
    if isinstance(value, np.ndarray):
        return array(value, ctx=ctx, dtype=value.dtype if dtype == "asnumpy" else dtype)
    return value


def _check_dtype(dtype, allow_asnumpy=True):
    if not ((allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy")
            or dtype in (np.float16, np.float32, np.float64)):
        raise ValueError("dtype must be %snp.float16, np.float32 or np.float64, got %r"
                         % ("'asnumpy', " if allow_asnumpy else "", dtype))


def _parse_location(sym, location, ctx, dtype=default_dtype()):
    """{argument name: NDArray} (sorted by name) from a list (in list_arguments() order) or a
    dict of numpy arrays / NDArrays."""
    if not isinstance(location, (dict, list, tuple)):
        raise TypeError("location must be a list, a tuple or a dict, got %s" % type(location))
    _check_dtype(dtype)
    names = sym.list_arguments()
    if isinstance(location, dict):
        if set(location.keys()) != set(names):
            raise ValueError("Symbol arguments and keys of the given location do not match."
                             "symbol args:%s, location.keys():%s"
                             % (str(set(names)), str(set(location.keys()))))
    else:
        if len(location) != len(names):
            raise ValueError("location has %d arrays, the symbol has %d arguments (%s)"
                             % (len(location), len(names), ", ".join(names)))
        location = dict(zip(names, location))
    return OrderedDict(sorted((k, _np_to_nd(v, ctx, dtype)) for k, v in location.items()))


def _parse_aux_states(sym, aux_states, ctx, dtype=default_dtype()):
    """{aux state name: NDArray} from a list or dict, or None."""
    _check_dtype(dtype)
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states.keys()) != set(names):
            raise ValueError("Symbol aux_states names and given aux_states do not match."
                             "symbol aux_names:%s, aux_states.keys:%s"
                             % (str(set(names)), str(set(aux_states.keys()))))
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: array(v, ctx=ctx, dtype=np.asarray(v).dtype if dtype == "asnumpy" else dtype)
            for k, v in aux_states.items()}


def _assign(target, value):
    """target's contents replaced by value (a 0-d target takes [()], others [:])."""
    if isinstance(value, NDArray):
        value = value.asnumpy()
    value = np.asarray(value, dtype=target.dtype)
    if target.ndim == 0:
        target[()] = value.item()
    else:
        target[:] = value


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Outputs (numpy; one array when one output) of `sym` run on the given numpy inputs."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: array(v) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype()):
    """Central-difference gradient of sum(outputs[0]) with respect to each float argument in
    `location` (name -> numpy array), perturbing one element at a time."""
    _check_dtype(dtype, allow_asnumpy=False)
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        _assign(executor.arg_dict[k], v)
    location = {k: np.array(v, order="C", copy=True) for k, v in location.items()}

    def forward_sum():
        if aux_states is not None:
            for key, val in aux_states.items():
                _assign(executor.aux_dict[key], val)
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy()

    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        flat, old = v.reshape(-1), v.copy()
        for i in range(flat.size):
            flat[i] = old.flat[i] + eps / 2.0
            _assign(executor.arg_dict[k], v)
            plus = forward_sum()
            flat[i] = old.flat[i] - eps / 2.0
            _assign(executor.arg_dict[k], v)
            minus = forward_sum()
            grads[k].flat[i] = (plus.astype(np.float64) - minus).sum() / eps
            flat[i] = old.flat[i]
        _assign(executor.arg_dict[k], old)
    return grads


def _grad_requests(sym, grad_nodes):
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
    if isinstance(grad_nodes, (list, tuple)):
        return list(grad_nodes), {k: "write" for k in grad_nodes}
    if isinstance(grad_nodes, dict):
        return list(grad_nodes.keys()), dict(grad_nodes)
    raise ValueError("grad_nodes must be None, a list/tuple of names or a dict name -> "
                     "grad_req, got %s" % type(grad_nodes))


def _compare_grad(req, name, reference, got, before, rtol, atol, names, equal_nan=False):
    got = _to_numpy(got)
    if req == "write":
        assert_almost_equal(reference, got, rtol, atol, names, equal_nan=equal_nan)
    elif req == "add":
        assert_almost_equal(reference, got - before, rtol, atol, names, equal_nan=equal_nan)
    elif req == "null":
        assert_almost_equal(before, got, rtol, atol, names, equal_nan=equal_nan)
    else:
        raise ValueError("Invalid grad_req %s for argument %s" % (req, name))


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=default_dtype()):
    """Checks the backward pass of `sym` against finite differences.

    The output is multiplied by a fixed random projection and summed, so every output element
    contributes; the symbolic gradient of each node in grad_nodes (default: every argument;
    a dict gives each its grad_req) is compared with the central difference of step
    numeric_eps (default by dtype). 'add' compares the gradient added to random initial
    values, 'null' that the initial values stay.
    """
    _check_dtype(dtype, allow_asnumpy=False)
    if grad_stype_dict and any(v != "default" for v in grad_stype_dict.values()):
        raise NotImplementedError(_SPARSE_REFUSED % (sorted(grad_stype_dict.values())[-1],))
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux_states is None else {k: v.asnumpy() for k, v in aux_states.items()}
    grad_nodes, grad_req = _grad_requests(sym, grad_nodes)
    _, out_shape, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    if out_shape is None:
        raise ValueError("check_numeric_gradient: the output shape of %s cannot be inferred from "
                         "the location's shapes" % sym.name)
    out = mx.sym.make_loss(sym * mx.sym.Variable("__random_proj"))
    args = dict(location)
    args["__random_proj"] = array(np.random.rand(*out_shape[0]) + 0.1, ctx=ctx, dtype=dtype)
    grads_before = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    grads_before["__random_proj"] = np.random.normal(0, 0.01, size=out_shape[0])
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_before.items()}
    grads_before = {k: v.asnumpy() for k, v in args_grad.items()}
    executor = out.bind(ctx, grad_req=grad_req, args=args, args_grad=args_grad,
                        aux_states=aux_states)
    if len(executor.outputs) != 1:
        raise ValueError("check_numeric_gradient needs a single-output symbol, %s has %d"
                         % (sym.name, len(executor.outputs)))
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16) and eps < 1e-5:
        raise ValueError("numeric_eps=%g is too small for %s finite differences (>= 1e-5)"
                         % (eps, np.dtype(dtype).name))
    executor.backward()
    numeric = numeric_grad(executor, location_npy, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for name in grad_nodes:
        _compare_grad(grad_req[name], name, numeric[name], executor.grad_dict[name],
                      grads_before[name], rtol, atol, ("NUMERICAL_%s" % name, "BACKWARD_%s" % name))


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=default_dtype()):
    """Runs sym forward (is_train=False) at `location` and compares each output with
    `expected` (a list in output order or a dict by output name); returns the outputs."""
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    args_grad = {k: mx.nd.zeros(v.shape, ctx=ctx, dtype=v.dtype if dtype == "asnumpy" else dtype)
                 for k, v in location.items()}
    executor = sym.bind(ctx=ctx, args=location, args_grad=args_grad, aux_states=aux_states)
    executor.forward(is_train=False)
    outputs = executor.outputs
    if len(expected) != len(outputs):
        raise AssertionError("%d expected arrays for %d outputs (%s)"
                             % (len(expected), len(outputs), ", ".join(sym.list_outputs())))
    for name, expect, output in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(expect, output, rtol, atol, ("EXPECTED_%s" % name, "FORWARD_%s" % name),
                            equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=default_dtype()):
    """Runs sym forward (is_train=True) and backward with `out_grads` and compares the
    gradients with `expected` (a list in list_arguments() order or a dict by name; grad_req a
    str, list or dict as for bind); returns the gradient arrays by name."""
    if grad_stypes and any(v not in (None, "default") for v in grad_stypes.values()):
        raise NotImplementedError(_SPARSE_REFUSED % (sorted(map(str, grad_stypes.values()))[-1],))
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    # Dirty gradient buffers: 'add' must add to them, 'null' must leave them. Compared as the
    # arrays hold them (in their dtype), not as drawn.
    before = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    grads = {k: array(v, ctx=ctx, dtype=np.asarray(expected[k]).dtype if dtype == "asnumpy"
                      else dtype) for k, v in before.items()}
    before = {k: v.asnumpy() for k, v in grads.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    executor = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux_states,
                        grad_req=grad_req)
    executor.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [_np_to_nd(g, ctx, dtype) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = {k: _np_to_nd(g, ctx, dtype) for k, g in out_grads.items()}
    elif out_grads is not None:
        raise TypeError("out_grads must be None, a list or a dict, got %s" % type(out_grads))
    executor.backward(out_grads)
    for name in expected:
        _compare_grad(grad_req.get(name, "null"), name, expected[name], grads[name],
                      before[name], rtol, atol, ("EXPECTED_%s" % name, "BACKWARD_%s" % name),
                      equal_nan)
    return grads


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds per forward+backward ("whole") or forward ("forward") run of sym."""
    ctx = ctx or default_context()
    grad_req = grad_req or "write"
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=arr.shape) for k, arr in exe.arg_dict.items()}
    else:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx,
                              **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(exe.arg_dict[name].dtype)
    if typ not in ("whole", "forward"):
        raise ValueError('typ can only be "whole" or "forward".')
    train = typ == "whole"

    def run():
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)
    run()
    mx.nd.waitall()
    tic = time.time()
    for _ in range(N):
        run()
    mx.nd.waitall()
    return (time.time() - tic) / N


def _device_present(ctx):
    return ctx.device_type != "gpu" or ctx.device_id < mx.context.num_gpus()


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Checks that `sym` gives the same outputs and gradients in each entry of ctx_list (a dict
    of simple_bind arguments: ctx, input shapes, type_dict), against the most precise entry.
    Entries whose device is not present are dropped (logged); returns the ground truth."""
    if len(ctx_list) < 2:
        raise ValueError("check_consistency needs at least two entries in ctx_list")
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    if len(syms) != len(ctx_list):
        raise ValueError("%d symbols for %d contexts" % (len(syms), len(ctx_list)))
    kept = [(s, c) for s, c in zip(syms, ctx_list) if _device_present(c["ctx"])]
    if len(kept) < len(ctx_list):
        logging.warning("check_consistency: skipping %d of %d entries whose device is not "
                        "present (%s)", len(ctx_list) - len(kept), len(ctx_list),
                        sorted({str(c["ctx"]) for c in ctx_list if not _device_present(c["ctx"])}))
    if not kept:
        raise ValueError("check_consistency: none of the contexts in ctx_list is present")
    output_names, arg_names = kept[0][0].list_outputs(), kept[0][0].list_arguments()
    exes = []
    for s, c in kept:
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise ValueError("check_consistency: the symbols differ in arguments or outputs")
        exes.append(s.simple_bind(grad_req=grad_req, **c))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for n, arr in sorted(exes[0].arg_dict.items()):
        if n not in arg_params:
            arg_params[n] = (np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape)
                             if use_uniform else np.random.normal(size=arr.shape, scale=scale)
                             ).astype(rand_type)
    for n in exes[0].aux_dict:
        aux_params.setdefault(n, 0)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0

    def smaller_dtype(dt1, dt2):
        return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2

    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    gt = ground_truth
    if gt is None:
        gt = dict(exes[gt_idx].output_dict)
        if grad_req != "null":
            gt.update(exes[gt_idx].grad_dict)

    def compare(i, name, arr, gtarr, rt, at, what):
        try:
            assert_almost_equal(arr, gtarr, rtol=rt, atol=at, equal_nan=equal_nan,
                                names=("ctx%d_%s" % (i, name), "ctx%d_%s" % (gt_idx, name)))
        except AssertionError as e:
            print("%s Err: ctx %d vs ctx %d at %s" % (what, i, gt_idx, name))
            traceback.print_exc()
            if raise_on_err:
                raise
            print(str(e))

    for exe in exes:
        exe.forward(is_train=False)
    for i, exe in enumerate(exes):
        if i != gt_idx or ground_truth is not None:
            for name, arr in zip(output_names, exe.outputs):
                compare(i, name, arr, gt[name], rtol, atol, "Predict")
    if grad_req == "null":
        return gt
    for exe in exes:
        exe.forward(is_train=True)
    least = [out.dtype for out in exes[0].outputs]
    for exe in exes:
        least = [smaller_dtype(out.dtype, dt) for out, dt in zip(exe.outputs, least)]
    golden = [out.astype(dt).asnumpy() for out, dt in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([array(g, ctx=exe._ctx, dtype=out.dtype)
                      for g, out in zip(golden, exe.outputs)])
    for i, exe in enumerate(exes):
        if i == gt_idx and ground_truth is None:
            continue
        for name, arr in zip(output_names + arg_names, exe.outputs + exe.grad_arrays):
            if gt.get(name) is None:
                assert arr is None
                continue
            gtarr, rt, at = gt[name], rtol, atol
            if (smaller_dtype(arr.dtype, dtypes[i]) != arr.dtype
                    or smaller_dtype(gtarr.dtype, dtypes[gt_idx]) != gtarr.dtype):
                rt, at = get_tols(arr.astype(smaller_dtype(arr.dtype, dtypes[i])),
                                  gtarr.astype(smaller_dtype(gtarr.dtype, dtypes[gt_idx])),
                                  rtol, atol)
            compare(i, name, arr, gtarr, rt, at, "Train")
    return gt


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1E-4, atol=1E-4):
    """Checks that net_builder(prefix='net_')'s block gives the same outputs (and input
    gradients) imperatively and hybridized, from the same parameters, and matches
    numpy_func when given."""
    saved_out, saved_grads, params = None, None, None
    for hybridize in (False, True):
        for use_autograd in ((False, True) if test_grad else (False,)):
            net = net_builder(prefix="net_")
            net.initialize()
            if params is not None:  # the first block's parameter values, by name
                for k, v in net.collect_params().items():
                    v.set_data(mx.nd.array(params[k]))
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with mx.autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if params is None:
                params = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
            if saved_out is None:
                saved_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), saved_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if saved_grads is None:
                    saved_grads = grads
                else:
                    for g, s in zip(grads, saved_grads):
                        assert_almost_equal(g, s, rtol=rtol, atol=atol)
    if numpy_func is not None:
        assert_almost_equal(saved_out, numpy_func(*[x.asnumpy() for x in data_l]),
                            rtol=rtol, atol=atol)
