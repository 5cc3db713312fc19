"""mx.gluon.utils: helpers shared by Gluon code (MXNet 1.9.1's gluon.utils).

split_data / split_and_load cut a batch along its batch axis for data parallelism,
clip_global_norm rescales gradients by their joint 2-norm, check_sha1 verifies a file, and
download only serves files that are already on disk: nanomx never reaches the network.
The private helpers (_indent, _brief_print_list, HookHandle, shape_is_known) are what
parameter.py and block.py use for printing, hooks and deferred initialization.
"""
import collections
import hashlib
import os
import warnings
import weakref

import numpy as np

from .. import ndarray
from ..base import MXNetError
from ..ndarray import NDArray
from ..symbol import Symbol

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "shape_is_known", "HookHandle"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """`num_slice` slices of `data` along `batch_axis` (a list, even for one slice).

    With even_split, a batch size that `num_slice` does not divide is an error; otherwise the
    first `size % num_slice` slices get one more element each, as MXNet does.
    """
    if not isinstance(num_slice, (int, np.integer)) or num_slice < 1:
        raise ValueError("num_slice must be a positive int, got %r" % (num_slice,))
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            "data with shape %s cannot be evenly split into %d slices along axis %d. "
            "Use a batch size that's multiple of %d or set even_split=False to allow "
            "uneven partitioning of data." % (str(data.shape), num_slice, batch_axis, num_slice))
    if not even_split and size < num_slice:
        raise ValueError("Too many slices for data with shape %s. Arguments are num_slice=%d "
                         "and batch_axis=%d." % (str(data.shape), num_slice, batch_axis))
    step, extras = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + step + (1 if i < extras else 0))
    if num_slice == 1:
        return [data]
    return [ndarray.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1])
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits `data` into len(ctx_list) slices and copies slice i to ctx_list[i]."""
    if not isinstance(data, ndarray.NDArray):
        data = ndarray.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scales `arrays` in place so that their joint 2-norm is at most `max_norm`.

    Returns the norm before scaling: a float with check_isfinite (which waits for it, and
    warns on nan/inf), else a (1,) NDArray so that no wait happens.
    """
    assert len(arrays) > 0
    ctx = arrays[0].context
    squares = []
    for arr in arrays:
        flat = arr.reshape((-1,))
        squares.append(ndarray.dot(flat, flat).as_in_context(ctx))
    total_norm = ndarray.sqrt(ndarray.add_n(*squares) if len(squares) > 1 else squares[0])
    total_norm = total_norm.reshape((1,))
    if check_isfinite:
        if not np.isfinite(total_norm.asscalar()):
            warnings.warn(UserWarning("nan or inf is detected. Clipping results will be "
                                      "undefined."), stacklevel=2)
    scale = max_norm / (total_norm + 1e-8)
    scale = ndarray.minimum(scale, ndarray.ones((1,), ctx=ctx))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    if check_isfinite:
        return total_norm.asscalar()
    return total_norm


def _indent(text, num_spaces):
    """Indents every line of `text` but the first by `num_spaces` (for nested reprs)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line for line in lines)


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file's content equals `sha1_hash` (hex digits)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while True:
            data = f.read(1048576)
            if not data:
                break
            sha1.update(data)
    return sha1.hexdigest() == sha1_hash


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Returns the local file for `url` when it is already there (and its SHA-1 matches);
    nanomx has no network access, so anything else raises MXNetError naming the file to
    place by hand."""
    del retries, verify_ssl  # kept for MXNet's signature
    fname = url.split("/")[-1]
    if path is None:
        target = fname
    else:
        path = os.path.expanduser(path)
        target = os.path.join(path, fname) if os.path.isdir(path) else path
    if not overwrite and os.path.exists(target) and (
            sha1_hash is None or check_sha1(target, sha1_hash)):
        return target
    reason = "does not exist" if not os.path.exists(target) else (
        "would be overwritten" if overwrite else "has a different SHA-1 than %s" % sha1_hash)
    raise MXNetError("download(%r): nanomx does not download files (no network access); the "
                     "local file %r %s. Copy the file there by hand." % (url, target, reason))


def _get_repo_url():
    """The base URL of MXNet's model repository (MXNET_GLUON_REPO overrides it)."""
    default_repo = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
    repo_url = os.environ.get("MXNET_GLUON_REPO", default_repo)
    if repo_url[-1] != "/":
        repo_url = repo_url + "/"
    return repo_url


def _get_repo_file_url(namespace, filename):
    """The repository URL of `filename` under `namespace` (gluon/models, ...)."""
    return "{base_url}{namespace}/{filename}".format(base_url=_get_repo_url(),
                                                     namespace=namespace, filename=filename)


def _brief_print_list(lst, limit=7):
    """`lst` as "'a', 'b', ..., 'z'" keeping at most `limit` entries, for error messages."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ", ..., " + \
            _brief_print_list(lst[-limit // 2:], limit)
    return ", ".join(["'%s'" % str(i) for i in lst])


class HookHandle(object):
    """What register_forward_hook / register_forward_pre_hook return: detach() removes the
    hook; usable as a context manager that detaches on exit."""

    _next_id = [0]

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        assert not self._hooks_dict_ref, "The same handle cannot be attached twice."
        self._id = HookHandle._next_id[0]
        HookHandle._next_id[0] += 1
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref(), self._id)

    def __setstate__(self, state):
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(collections.OrderedDict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


def shape_is_known(shape):
    """Whether every dimension of `shape` is known: None, an empty shape (MXNet 1.x's legacy
    shape semantics) or a 0 / -1 dimension means unknown."""
    if shape is None:
        return False
    if len(shape) == 0:
        return False
    for dim in shape:
        if dim in (0, -1):
            return False
        if dim < -1:
            raise ValueError("Invalid shape %s: dimensions must be >= -1" % (shape,))
    return True


def _check_same_symbol_type(symbols):
    """The Symbol type a Group of `symbols` should have (nanomx has one Symbol type)."""
    del symbols
    from ..symbol import Symbol
    return Symbol


def _check_all_np_ndarrays(out):
    """MXNet checks numpy-array outputs under its numpy mode; nanomx has no such mode."""
    del out


# ---- nested inputs and outputs of blocks (block.py) ---------------------------------------
def _flatten(args, inout_str):
    """A flat list of the arrays/symbols in nested lists, and the format to rebuild them
    (0: one array, n > 0: a symbol with n outputs, -1: None, a list: nested)."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        length = len(args.list_outputs())
        return [args], (length if length > 1 else 0)
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise ValueError("When hybridized, the input of HybridBlock {} must be (nested) list of "
                         "Symbol or NDArray, but got {} of type {}".format(inout_str, str(args),
                                                                           str(type(args))))
    flat, fmts = [], []
    for i in args:
        arg, fmt = _flatten(i, inout_str)
        flat.extend(arg)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """The nested structure `fmt` describes, rebuilt from the flat `args`."""
    def merge(args, fmt):
        if isinstance(fmt, int):
            if fmt < -1:
                raise ValueError("Unsupported encoded format {}.".format(fmt))
            if fmt == 0:
                return args[0], args[1:]
            if fmt == -1:
                if args[0] is not None:
                    raise ValueError("We do not support passing types that are not None when "
                                     "the initial HybridBlock has received NoneType and has been "
                                     "hybridized. Received arg = {}, fmt = {}.".format(args[0],
                                                                                      fmt))
                return None, args[1:]
            return args[:fmt], args[fmt:]
        if not isinstance(args, (list, tuple)):
            raise ValueError("When hybridized, the output of HybridBlock must be (nested) list "
                             "of Symbol or NDArray, but got {} of type {}".format(args,
                                                                                  type(args)))
        ret = []
        for i in fmt:
            res, args = merge(args, i)
            ret.append(res)
        return ret, args
    return merge(args, fmt)[0]


def _gather_type_ctx_info(args):
    """(has a Symbol, has an NDArray, the set of contexts, the first NDArray's context)."""
    if isinstance(args, NDArray):
        return False, True, {args.context}, args.context
    if isinstance(args, Symbol):
        return True, False, set(), None
    if isinstance(args, (list, tuple)):
        has_sym = has_nd = False
        ctxs, first = set(), None
        for a in args:
            s, n, c, f = _gather_type_ctx_info(a)
            has_sym, has_nd = has_sym or s, has_nd or n
            if first is None:
                first = f
            ctxs |= c
        return has_sym, has_nd, ctxs, first
    return False, False, set(), None
