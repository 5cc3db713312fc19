"""Without a GPU (CI): num_gpus() is 0 and gpu(i) is refused clearly (docs/cuda.md)."""
import pytest

import nanomx as mx

pytestmark = pytest.mark.skipif(mx.context.num_gpus() > 0, reason="a GPU is visible")


def test_num_gpus_is_zero():
    assert mx.context.num_gpus() == mx.num_gpus() == 0


def test_gpu_memory_info_is_refused_clearly():
    with pytest.raises(mx.MXNetError, match=r"gpu\(0\) requested, but (no GPU is visible \(CUDA: "
                       r"|this build has no CUDA support)"):
        mx.context.gpu_memory_info(0)
    with pytest.raises(mx.MXNetError, match=r"gpu\(3\) requested, but "):
        mx.context.gpu_memory_info(3)


def test_gpu_arrays_are_refused_clearly():
    ctx = mx.gpu(0)  # a context is only a name, as in MXNet
    assert ctx.device_type == "gpu"
    with pytest.raises(mx.MXNetError, match=r"gpu\(0\) requested, but "):
        mx.nd.zeros((2, 3), ctx=ctx)
    with pytest.raises(mx.MXNetError, match=r"gpu\(0\) requested, but "):
        mx.nd.array([1.0, 2.0]).as_in_context(ctx).wait_to_read()
