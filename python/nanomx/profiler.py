"""mx.profiler: MXNet 1.x's profiler front end over nanomx's C API.

Beyond MXNet: Task, Frame and Event are context managers, `scope()` restores the previous scope
when its block raises, and `dumps(reset=True)` with aggregation off returns "" instead of
crashing.
"""
import contextlib
import contextvars
import warnings

from .base import _LIB

_STATES = {"stop": 0, "run": 1}
_PROCESSES = {"worker": 0, "server": 1}
_FORMATS = {"table": 0, "json": 1}
_SORT_BY = {"total": 0, "avg": 1, "min": 2, "max": 3, "count": 4}


def _lookup(table, value, what):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError("%s must be one of %s, got %r"
                         % (what, ", ".join(repr(k) for k in table), value)) from None


_profiler_kvstore_handle = None


def set_kvstore_handle(handle):
    """The KVStore whose servers a profile_process='server' request travels through (as MXNet's
    profiler.set_kvstore_handle; the KVStore sets it when it is created)."""
    global _profiler_kvstore_handle
    _profiler_kvstore_handle = handle


def _kvstore_handle(profile_process):
    """The handle of the KVStore set by set_kvstore_handle, as an integer (0: none)."""
    handle = _profiler_kvstore_handle
    if handle is None:
        return 0
    handle = getattr(handle, "handle", handle)  # a KVStore object or its handle
    return int(getattr(handle, "value", handle) or 0)


def _name(name, what):
    """A profiler object's name: a str, as MXNet's c_str requires (None used to become 'None')."""
    if not isinstance(name, str):
        raise TypeError("%s name must be a str, got %s" % (what, type(name).__name__))
    return name


class schedule(object):
    """A step schedule, as torch.profiler.schedule: after `skip_first` steps, cycles of `wait`
    steps off, `warmup` steps recorded and discarded and `active` steps kept (one file
    `<stem>.step<N>.json` per cycle, N its last active step); `repeat=0` cycles until stopped.
    Pass it to set_config(schedule=...) and call step() once per step."""

    def __init__(self, wait, warmup, active, repeat=0, skip_first=0):
        values = {"wait": wait, "warmup": warmup, "active": active, "repeat": repeat,
                  "skip_first": skip_first}
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError("schedule %s must be a non-negative int, got %r" % (key, value))
        if active < 1:
            raise ValueError("schedule active must be at least 1, got %d" % active)
        self.wait, self.warmup, self.active = wait, warmup, active
        self.repeat, self.skip_first = repeat, skip_first

    def config_items(self):
        """The set_config keys this schedule stands for."""
        return [("schedule_" + k, getattr(self, k))
                for k in ("wait", "warmup", "active", "repeat", "skip_first")]

    def __repr__(self):
        return ("schedule(wait=%d, warmup=%d, active=%d, repeat=%d, skip_first=%d)"
                % (self.wait, self.warmup, self.active, self.repeat, self.skip_first))


_on_trace_ready = None


def set_config(**kwargs):
    """Sets profiler options; every value is sent as str(value), as MXNet does.

    Keys: profile_all, profile_symbolic, profile_imperative, profile_memory, profile_api,
    filename, continuous_dump, dump_period, aggregate_stats, profile_process,
    gpu_memory_profile_filename_prefix, and nanomx's max_buffer_mb, duration_events, fsync,
    max_file_mb, max_files, schedule (a schedule object, or the schedule_* keys) and
    on_trace_ready (a callable given each finished window's path by step()).
    As MXNet, a profile_<kind> flag not passed is True: pass one as False to leave that kind out.
    """
    global _on_trace_ready
    sched = kwargs.pop("schedule", None)
    callback = kwargs.pop("on_trace_ready", None)
    if sched is not None:
        if not isinstance(sched, schedule):
            raise TypeError("schedule must be a profiler.schedule, got %s"
                            % type(sched).__name__)
        kwargs.update(sched.config_items())
    if callback is not None and not callable(callback):
        raise TypeError("on_trace_ready must be callable, got %s" % type(callback).__name__)
    profile_process = kwargs.get("profile_process", "worker")
    keys = [str(k) for k in kwargs]
    values = [str(v) for v in kwargs.values()]
    _LIB.set_config(keys, values, _kvstore_handle(profile_process))
    _on_trace_ready = callback


def step():
    """Ends the current step and begins the next (as torch.profiler's step()); call it once per
    training step. Returns the path of the trace file a schedule's active window just finished
    (after on_trace_ready ran with it), else None."""
    finished = _LIB.profile_step()
    if not finished:
        return None
    if _on_trace_ready is not None:
        _on_trace_ready(finished)
    return finished


def set_state(state="stop", profile_process="worker"):
    """Starts ('run') or stops ('stop') recording."""
    _LIB.set_state(_lookup(_STATES, state, "state"),
                   _lookup(_PROCESSES, profile_process, "profile_process"),
                   _kvstore_handle(profile_process))


def dump(finished=True, profile_process="worker"):
    """Writes the trace file; `finished=True` closes it (only the object True counts, as in
    MXNet: `finished=1` leaves the file open for more)."""
    finished_flag = 1 if finished is True else 0
    _LIB.dump(finished_flag, _lookup(_PROCESSES, profile_process, "profile_process"),
              _kvstore_handle(profile_process))


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics as MXNet's table (format='table') or JSON (format='json');
    "" when aggregate_stats is off."""
    return _LIB.dumps(1 if reset else 0, _lookup(_FORMATS, format, "format"),
                      _lookup(_SORT_BY, sort_by, "sort_by"), 1 if ascending else 0)


def pause(profile_process="worker"):
    """Drops every record until resume() (objects keep their state)."""
    _LIB.pause(1, _lookup(_PROCESSES, profile_process, "profile_process"),
               _kvstore_handle(profile_process))


def resume(profile_process="worker"):
    _LIB.pause(0, _lookup(_PROCESSES, profile_process, "profile_process"),
               _kvstore_handle(profile_process))


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated: use set_config(profile_<mode>=True, filename=...)."""
    warnings.warn("profiler.profiler_set_config() is deprecated. "
                  "Please use profiler.set_config() instead", DeprecationWarning, stacklevel=2)
    _LIB.set_config(["profile_" + str(mode), "filename"], [str(True), str(filename)], 0)


def profiler_set_state(state="stop"):
    """Deprecated: use set_state(state)."""
    warnings.warn("profiler.profiler_set_state() is deprecated. "
                  "Please use profiler.set_state() instead", DeprecationWarning, stacklevel=2)
    set_state(state)


def dump_profile():
    """Deprecated: use dump(True)."""
    warnings.warn("profiler.dump_profile() is deprecated. "
                  "Please use profiler.dump() instead", DeprecationWarning, stacklevel=2)
    dump(True)


class Domain(object):
    """A named group of tasks, frames, counters and markers (never destroyed, as in MXNet)."""

    def __init__(self, name):
        self.name = _name(name, "Domain")
        self.handle = _LIB.create_domain(self.name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Handle(object):
    """A profiler object owning a C API handle, destroyed with the object."""

    _handle = None

    @property
    def handle(self):
        return self._handle

    def __str__(self):
        return self.name

    def __del__(self, _destroy=_LIB.destroy_handle):
        if self._handle is not None:
            _destroy(self._handle)
            self._handle = None


class _Duration(_Handle):
    """start()/stop() around a region; also a context manager."""

    def __init__(self, name, handle):
        self.name = name
        self._handle = handle

    def start(self):
        _LIB.duration_start(self._handle)

    def stop(self):
        _LIB.duration_stop(self._handle)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()


class Task(_Duration):
    """A duration in a domain (trace category: the domain's name)."""

    def __init__(self, domain, name):
        self.domain = domain
        super().__init__(name, _LIB.create_task(domain.handle, _name(name, "Task")))


class Frame(_Duration):
    """A duration in a domain (trace category: '<domain>,frame')."""

    def __init__(self, domain, name):
        self.domain = domain
        super().__init__(name, _LIB.create_frame(domain.handle, _name(name, "Frame")))


class Event(_Duration):
    """A duration outside any domain (trace category: 'event')."""

    def __init__(self, name):
        super().__init__(name, _LIB.create_event(_name(name, "Event")))


class Counter(_Handle):
    """A 64-bit counter in a domain; each change is one record. Going below zero wraps around
    (unsigned, as MXNet)."""

    def __init__(self, domain, name, value=None):
        self.name = _name(name, "Counter")
        self.domain = domain
        self._handle = _LIB.create_counter(domain.handle, self.name)
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        """value: an integer in [-2**63, 2**64); a negative one wraps to uint64 (as MXNet's
        c_uint64), anything beyond raises ValueError instead of recording a wrapped number."""
        value = int(value)
        if not -2**63 <= value < 2**64:
            raise ValueError("counter value must be in [-2**63, 2**64), got %d" % value)
        _LIB.set_counter(self._handle, value & 0xFFFFFFFFFFFFFFFF)

    def increment(self, delta=1):
        _LIB.adjust_counter(self._handle, _signed64(delta))

    def decrement(self, delta=1):
        _LIB.adjust_counter(self._handle, -_signed64(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self


def _signed64(delta):
    delta = int(delta)
    if not -2**63 < delta < 2**63:
        raise ValueError("counter delta must fit in a signed 64-bit int, got %d" % delta)
    return delta


class Marker(object):
    """An instant in a domain: Marker(domain, name).mark(scope)."""

    def __init__(self, domain, name):
        self.name = _name(name, "Marker")
        self.domain = domain

    def mark(self, scope="process"):
        """scope: 'global', 'process', 'thread', 'task' or 'marker'."""
        _LIB.set_marker(self.domain.handle, str(self.name), str(scope))


_current_scope = contextvars.ContextVar("profiler_scope", default="<unk>:")


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=True):
    """Names the memory allocations made inside the block `<outer>:<name>:`.

    With append_mode the name is appended to the enclosing scope. The previous scope comes back
    when the block ends, also when it raises (MXNet leaves it set then).
    """
    name = name + ":" if not name.endswith(":") else name
    previous = _current_scope.get()
    if append_mode and previous != "<unk>:":
        name = previous + name
    token = _current_scope.set(name)
    _LIB.set_scope(name)
    try:
        yield name
    finally:
        _current_scope.reset(token)
        _LIB.set_scope(previous)
