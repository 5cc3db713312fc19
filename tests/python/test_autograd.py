"""mx.autograd: recording imperative calls, backward through the operators' gradient rules,
grad_req, pause/train scopes, retain_graph, autograd.grad and MXNet's error messages."""
import numpy as np
import pytest

import nanomx as mx
from nanomx import autograd


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.asnumpy() if hasattr(a, "asnumpy") else a, b, rtol=tol,
                               atol=tol)


def test_flags_and_scopes():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
        assert autograd.is_recording() and autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert not autograd.is_recording() and not autograd.is_training()
    assert autograd.set_recording(True) is False
    assert autograd.set_recording(False) is True
    assert autograd.set_training(True) is False
    assert autograd.set_training(False) is True


def test_flags_are_per_thread():
    import threading
    seen = []
    with autograd.record():
        t = threading.Thread(target=lambda: seen.append(autograd.is_recording()))
        t.start()
        t.join()
    assert seen == [False]


def test_scalar_chain():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    assert x.grad is not None
    _close(x.grad, [0, 0, 0])
    with autograd.record():
        y = (x * 3 + 1) * 2
    y.backward()
    _close(x.grad, [6, 6, 6])
    _close(y, (np.array([1, 2, 3]) * 3 + 1) * 2)


def test_head_gradient_and_grad_req_add():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = x * 2
        y.backward(mx.nd.array([1.0, 10.0]))
    _close(x.grad, [6, 60])


def test_grad_req_null_and_no_variables():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req="null")
    with autograd.record():
        y = x * 2
    with pytest.raises(mx.MXNetError,
                       match="There are no inputs in computation graph that require gradients"):
        y.backward()


def test_pause_is_not_recorded():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 2
        with autograd.pause():
            z = y * 5  # a constant to the graph
        w = y + 1
    w.backward()
    _close(x.grad, [2, 2])
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        z.backward()


def test_not_recorded_and_second_backward():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    y = x * 2  # outside record()
    with pytest.raises(mx.MXNetError, match="Cannot differentiate node because it is not in a "
                                            "computational graph"):
        y.backward()
    with autograd.record():
        y = x * 2
    y.backward()
    with pytest.raises(mx.MXNetError, match="retain_graph=True"):
        y.backward()


def test_retain_graph():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 4
    y.backward(retain_graph=True)
    _close(x.grad, [4, 4])
    y.backward()  # write again, same graph
    _close(x.grad, [4, 4])


def test_inplace_write_inside_record_fails():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        with pytest.raises(mx.MXNetError, match="Assigning to NDArrays that are already in a "
                                                "computational graph"):
            x += 1
    x += 1  # outside record() it is allowed
    _close(x, [2, 3])


def test_autograd_grad():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = x * 5 + 2
    g = autograd.grad(y, x)
    _close(g, [5, 5, 5])
    _close(x.grad, [0, 0, 0])  # untouched
    with autograd.record():
        y = x * 5
    g = autograd.grad([y], [x], head_grads=[mx.nd.array([1.0, 2.0, 3.0])])
    assert isinstance(g, list)
    _close(g[0], [5, 10, 15])
    with pytest.raises(AssertionError, match="variables cannot be an empty list"):
        autograd.grad(y, [])
    z = mx.nd.array([1.0])
    with autograd.record():
        y = x * 5
    with pytest.raises(mx.MXNetError, match="0-th variable because it does not require"):
        autograd.grad(y, [z])
    z.attach_grad()
    with autograd.record():
        y = x * 5
    with pytest.raises(mx.MXNetError, match="0-th variable because it is unreachable"):
        autograd.grad(y, [z])


def test_detach_and_mark_variables():
    x = mx.nd.array([1.0, 2.0])
    g = mx.nd.zeros((2,))
    autograd.mark_variables([x], [g])
    with autograd.record():
        y = x * 3
        d = y.detach()
        z = d * 2 + y
    z.backward()
    _close(g, [3, 3])  # nothing flows through the detached branch
    _close(x.grad, [3, 3])


def test_no_grad_attached_is_none():
    assert mx.nd.ones((2,)).grad is None


def test_no_rule_is_a_clear_error():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.argmax(x * 1, axis=0)
    with pytest.raises(mx.MXNetError, match="argmax"):
        y.backward()


# ---- composed operators against numpy ------------------------------------------------------------
def _attach(values):
    x = mx.nd.array(np.asarray(values, dtype=np.float32))
    x.attach_grad()
    return x


def test_polynomial():
    xv = np.array([-1.5, 0.0, 2.0, 3.0], dtype=np.float32)
    x = _attach(xv)
    with autograd.record():
        y = x * x + 2 * x
    y.backward()
    _close(x.grad, 2 * xv + 2)


def test_exp_log_chain():
    xv = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    x = _attach(xv)
    with autograd.record():
        y = mx.nd.log(mx.nd.exp(x) + 1) * x
    y.backward()
    sig = 1 / (1 + np.exp(-xv))
    _close(x.grad, np.log(np.exp(xv) + 1) + xv * sig, tol=1e-4)


def test_broadcast_and_reduction():
    av = np.arange(6, dtype=np.float32).reshape(2, 3)
    bv = np.array([[1.0], [2.0]], dtype=np.float32)
    a, b = _attach(av), _attach(bv)
    with autograd.record():
        y = mx.nd.sum(a * b - b)
    y.backward()
    _close(a.grad, np.broadcast_to(bv, (2, 3)))
    _close(b.grad, (av - 1).sum(axis=1, keepdims=True))


def test_dot():
    rng = np.random.RandomState(0)
    av = rng.randn(3, 4).astype(np.float32)
    bv = rng.randn(4, 2).astype(np.float32)
    a, b = _attach(av), _attach(bv)
    head = rng.randn(3, 2).astype(np.float32)
    with autograd.record():
        y = mx.nd.dot(a, b)
    y.backward(mx.nd.array(head))
    _close(a.grad, head @ bv.T, tol=1e-4)
    _close(b.grad, av.T @ head, tol=1e-4)


def test_fully_connected_and_softmax():
    rng = np.random.RandomState(1)
    xv = rng.randn(4, 5).astype(np.float32)
    wv = rng.randn(3, 5).astype(np.float32)
    bv = rng.randn(3).astype(np.float32)
    x, w, b = _attach(xv), _attach(wv), _attach(bv)
    head = rng.randn(4, 3).astype(np.float32)
    with autograd.record():
        z = mx.nd.FullyConnected(x, w, b, num_hidden=3)
        p = mx.nd.softmax(z)
    p.backward(mx.nd.array(head))
    zv = xv @ wv.T + bv
    e = np.exp(zv - zv.max(axis=1, keepdims=True))
    pv = e / e.sum(axis=1, keepdims=True)
    gz = pv * (head - (head * pv).sum(axis=1, keepdims=True))
    _close(p, pv, tol=1e-5)
    _close(w.grad, gz.T @ xv, tol=1e-4)
    _close(b.grad, gz.sum(axis=0), tol=1e-4)
    _close(x.grad, gz @ wv, tol=1e-4)


def test_variable_used_twice_sums():
    xv = np.array([1.0, 2.0], dtype=np.float32)
    x = _attach(xv)
    with autograd.record():
        y = x * 3
        z = y * y + y
    z.backward()
    _close(x.grad, (2 * 3 * xv * 3) + 3)


def test_reshape_view_is_recorded():
    xv = np.arange(6, dtype=np.float32)
    x = _attach(xv)
    with autograd.record():
        y = x.reshape((2, 3)) * 2
        z = mx.nd.sum(y * y)
    z.backward()
    _close(x.grad, 8 * xv)
    # Outside record() a reshape is a plain view.
    assert x.reshape((3, 2)).shape == (3, 2)


def test_pick_gradient_with_an_integer_index():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    x.attach_grad()
    index = mx.nd.array([0, 3, 1], dtype="int32")
    with mx.autograd.record():
        y = mx.nd.pick(x, index, axis=1)
    y.backward(mx.nd.array([1, 2, 3]))
    want = np.zeros((3, 4), np.float32)
    want[0, 0], want[1, 3], want[2, 1] = 1, 2, 3
    np.testing.assert_array_equal(x.grad.asnumpy(), want)
