"""Name registries of classes (initializers, metrics) that `create` looks names up in."""


def alias_decorator(registry, aliases):
    """A class decorator that registers the class in `registry` under each of the (lower-cased)
    `aliases` and returns it unchanged."""
    def decorate(klass):
        for name in aliases:
            registry[name.lower()] = klass
        return klass
    return decorate
