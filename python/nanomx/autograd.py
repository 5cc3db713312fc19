"""mx.autograd: recording imperative operator calls and differentiating them (MXNet 1.x's API).

    x = mx.nd.array([1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = x * x + 2 * x
    y.backward()
    x.grad  # 2x + 2

The recording and training flags are per thread. docs/symbolic.md ("Autograd") describes what
is recorded and how backward runs.
"""
from .base import _LIB

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad"]

_GRAD_REQ = {"null": 0, "write": 1, "add": 3}


def set_recording(is_recording):
    """Sets the recording flag of this thread; returns the previous value."""
    return _LIB.autograd_set_recording(bool(is_recording))


def set_training(train_mode):
    """Sets the training flag of this thread; returns the previous value."""
    return _LIB.autograd_set_training(bool(train_mode))


def is_recording():
    return _LIB.autograd_is_recording()


def is_training():
    return _LIB.autograd_is_training()


class _RecordingStateScope(object):
    """Sets recording and/or training on entry; restores on exit only what it changed."""

    def __init__(self, is_record, train_mode):
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None

    def __enter__(self):
        if self._enter_is_record is not None:
            self._prev_is_record = set_recording(self._enter_is_record)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)

    def __exit__(self, ptype, value, trace):
        if self._enter_is_record is not None and self._prev_is_record != self._enter_is_record:
            set_recording(self._prev_is_record)
        if self._enter_train_mode is not None and self._prev_train_mode != self._enter_train_mode:
            set_training(self._prev_train_mode)


def record(train_mode=True):
    """Scope that records operator calls (and sets training to `train_mode`)."""
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):
    """Scope that stops recording (and sets training to `train_mode`)."""
    return _RecordingStateScope(False, train_mode)


def train_mode():
    """Scope with training on; recording untouched."""
    return _RecordingStateScope(None, True)


def predict_mode():
    """Scope with training off; recording untouched."""
    return _RecordingStateScope(None, False)


def _as_list(arrays):
    from .ndarray import NDArray
    if isinstance(arrays, NDArray):
        return [arrays], True
    return list(arrays), False


def mark_variables(variables, gradients, grad_reqs="write"):
    """Makes each variable a graph leaf whose gradient goes into the matching buffer."""
    variables, _ = _as_list(variables)
    gradients, _ = _as_list(gradients)
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    reqs = []
    for req in grad_reqs:
        if req not in _GRAD_REQ:
            raise ValueError("grad_req must be one of %s, got %r" % (sorted(_GRAD_REQ), req))
        reqs.append(_GRAD_REQ[req])
    _LIB.autograd_mark_variables([v.handle for v in variables], reqs,
                                 [g.handle for g in gradients])


def _head_grads(heads, head_grads):
    if head_grads is None:
        return None
    from .ndarray import NDArray
    if isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    head_grads = list(head_grads)
    if len(head_grads) != len(heads):
        raise ValueError("heads and head_grads must be lists of the same length: %d vs %d"
                         % (len(heads), len(head_grads)))
    return [None if g is None else g.handle for g in head_grads]


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # noqa: F811
    """Computes the gradients of `heads` with respect to the marked variables (into .grad)."""
    heads, _ = _as_list(heads)
    _LIB.autograd_backward([h.handle for h in heads], _head_grads(heads, head_grads), [],
                           bool(retain_graph), False, bool(train_mode))


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # noqa: F811
    """The gradients of `heads` with respect to `variables` as new arrays (.grad untouched)."""
    from .ndarray.ndarray import _new
    heads, _ = _as_list(heads)
    variables, single = _as_list(variables)
    assert len(variables) > 0, "variables cannot be an empty list."
    if retain_graph is None:
        retain_graph = create_graph
    handles = _LIB.autograd_backward([h.handle for h in heads], _head_grads(heads, head_grads),
                                     [v.handle for v in variables], bool(retain_graph),
                                     bool(create_graph), bool(train_mode))
    results = [_new(h) for h in handles]
    return results[0] if single else results
