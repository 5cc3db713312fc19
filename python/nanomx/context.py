"""Device contexts: mx.cpu(i), mx.gpu(i), mx.Context, and the default-context stack."""
import threading

from .base import _LIB


class Context(object):
    """A device and its id, as MXNet's Context: `Context('cpu', 0)`, `Context(other)`.

    Usable in a `with` statement to make it the default context inside the block.
    """

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
    _default = threading.local()

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
            return
        if device_type not in Context.devstr2type:
            raise ValueError("unknown device type %r (expected one of %s)"
                             % (device_type, ", ".join(sorted(Context.devstr2type))))
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise ValueError("device_id must be a non-negative int, got %r" % (device_id,))
        self.device_typeid = Context.devstr2type[device_type]
        self.device_id = device_id

    @property
    def device_type(self):
        return Context.devtype2str[self.device_typeid]

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __str__(self):
        return "%s(%d)" % (self.device_type, self.device_id)

    __repr__ = __str__

    def __enter__(self):
        stack = _context_stack()
        stack.append(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _context_stack().pop()

    @classmethod
    def _from_ids(cls, device_typeid, device_id):
        ctx = cls.__new__(cls)
        ctx.device_typeid = device_typeid
        ctx.device_id = device_id
        return ctx


def _context_stack():
    stack = getattr(Context._default, "stack", None)
    if stack is None:
        stack = Context._default.stack = []
    return stack


def cpu(device_id=0):
    return Context("cpu", device_id)


def gpu(device_id=0):
    return Context("gpu", device_id)


def cpu_pinned(device_id=0):
    return Context("cpu_pinned", device_id)


def num_gpus():
    """How many CUDA devices nanomx can use (0 in a build without CUDA or without a GPU)."""
    return _LIB.gpu_count()


def gpu_memory_info(device_id=0):
    """(free, total) bytes of gpu(device_id); MXNetError, saying why, when there is no such GPU."""
    free, total = _LIB.gpu_memory_info(int(device_id))
    return int(free), int(total)


def current_context():
    """The innermost context of `with ctx:` blocks on this thread; cpu(0) outside them."""
    stack = _context_stack()
    return stack[-1] if stack else Context("cpu", 0)
