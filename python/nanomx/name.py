"""mx.name: automatic names for operator symbols (MXNet's NameManager and Prefix).

`NameManager.current.get(name, hint)` returns `name` when given, else `'%s%d' % (hint, n)` with
a per-hint counter (`fullyconnected0`, `dot0`, `_plus0`). `with NameManager():` starts fresh
counters; `with Prefix('p_'):` prepends 'p_' to every name, given or generated. The current
manager is per thread; each thread starts with the process's default one, never reset.
"""
import threading


class NameManager(object):
    """Names symbols from a hint and a per-hint counter."""

    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        if name:
            return name
        if hint not in self._counter:
            self._counter[hint] = 0
        name = "%s%d" % (hint, self._counter[hint])
        self._counter[hint] += 1
        return name

    def __enter__(self):
        self._old_manager = NameManager.current
        NameManager._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        assert self._old_manager is not None
        NameManager._current.value = self._old_manager


class Prefix(NameManager):
    """Prepends `prefix` to every name, given or generated."""

    def __init__(self, prefix):
        super(Prefix, self).__init__()
        self._prefix = prefix

    def get(self, name, hint):
        name = super(Prefix, self).get(name, hint)
        return self._prefix + name


_default = NameManager()


def _current():
    if not hasattr(NameManager._current, "value"):
        NameManager._current.value = _default
    return NameManager._current.value


class _CurrentDescriptor(object):
    def __get__(self, obj, cls):
        return _current()


NameManager.current = _CurrentDescriptor()
