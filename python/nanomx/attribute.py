"""mx.attribute: AttrScope, attributes given to every symbol created inside a `with` block."""
import threading


class AttrScope(object):
    """`with AttrScope(ctx_group='dev1'):` adds those attributes (strings) to new symbols."""

    _current = threading.local()

    def __init__(self, **kwargs):
        self._old_scope = None
        for value in kwargs.values():
            if not isinstance(value, str):
                raise ValueError("Set Attr only accepts string values")
        self._attr = kwargs

    def get(self, attr):
        """The scope's attributes updated with `attr` (which wins)."""
        if self._attr:
            ret = self._attr.copy()
            if attr:
                ret.update(attr)
            return ret
        return attr if attr else {}

    def __enter__(self):
        self._old_scope = AttrScope.current
        attr = AttrScope.current._attr.copy()
        attr.update(self._attr)
        self._attr = attr
        AttrScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        assert self._old_scope
        AttrScope._current.value = self._old_scope


_default = AttrScope()


class _CurrentDescriptor(object):
    def __get__(self, obj, cls):
        if not hasattr(AttrScope._current, "value"):
            AttrScope._current.value = _default
        return AttrScope._current.value


AttrScope.current = _CurrentDescriptor()
