"""mx.runtime: which of MXNet 1.9.1's compile-time features this nanomx build has.

    features = mx.runtime.Features()
    features.is_enabled("MKLDNN")    # True: nanomx's convolutions run on oneDNN

MXNet's library reports flags fixed at compile time; nanomx finds each one out from the build
it loaded, so the answer is about the library actually in use:

- libraries linked: the ELF dependencies (DT_NEEDED) of libnanomx.so and the Python extension
  decide CUDNN, NCCL, CUDA_RTC, TENSORRT, OPENMP, JEMALLOC, BLAS_*, MKLDNN and, with the image
  codecs plugin, OPENCV;
- plugins: DIST_KVSTORE is on when the MPI transport library (libnanomx_kvstore_mpi.so, or
  $NANOMX_KVSTORE_MPI_LIBRARY) exists; OPENCV needs OpenCV linked and the codecs plugin
  (libnanomx_imgcodecs.so, or $NANOMX_IMGCODECS_LIBRARY) present;
- devices: CUDA is on only when a GPU is usable (mx.context.num_gpus() > 0);
- the processor: CPU_SSE*, CPU_AVX*, SSE and F16C come from /proc/cpuinfo's flags;
- operators: LAPACK is on when MXNet's LAPACK-backed linalg operators are registered;
- DEBUG: libnanomx.so carries DWARF debug information (.debug_info);
- fixed facts of the code base: PROFILER (always built in), CXX14 (nanomx is C++20),
  INT64_TENSOR_SIZE (shapes and sizes are int64); CAFFE, SIGNAL_HANDLER, TVM_OP and BLAS_APPLE
  do not exist in nanomx.
"""
import collections
import os
import re
import struct

from .base import _LIB

__all__ = ["Feature", "feature_list", "Features"]

# MXNet 1.9.1's features, in its order (include/mxnet/libinfo.h).
_FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT",
    "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX",
    "CPU_AVX2",
    "OPENMP", "SSE", "F16C", "JEMALLOC",
    "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV",
    "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG",
    "TVM_OP",
)

# Feature -> /proc/cpuinfo flag (SSE3 is "pni" there).
_CPU_FLAGS = {"CPU_SSE": "sse", "CPU_SSE2": "sse2", "CPU_SSE3": "pni", "CPU_SSE4_1": "sse4_1",
              "CPU_SSE4_2": "sse4_2", "CPU_SSE4A": "sse4a", "CPU_AVX": "avx",
              "CPU_AVX2": "avx2", "SSE": "sse", "F16C": "f16c"}

# Feature -> prefixes of the shared libraries whose linking means it is built in.
_LINKED = {"CUDNN": ("libcudnn",), "NCCL": ("libnccl",), "CUDA_RTC": ("libnvrtc",),
           "TENSORRT": ("libnvinfer",), "OPENMP": ("libgomp", "libomp", "libiomp5"),
           "JEMALLOC": ("libjemalloc",), "BLAS_OPEN": ("libopenblas",),
           "BLAS_ATLAS": ("libatlas", "libsatlas", "libtatlas"), "BLAS_MKL": ("libmkl_",),
           "MKLDNN": ("libdnnl", "libmkldnn"), "OPENCV": ("libopencv_",)}

_FIXED = {"PROFILER": True, "CXX14": True, "INT64_TENSOR_SIZE": True, "CAFFE": False,
          "SIGNAL_HANDLER": False, "TVM_OP": False, "BLAS_APPLE": False}


class Feature(object):
    """One compile-time feature: `name` and `enabled`."""

    __slots__ = ("_name", "_enabled")

    def __init__(self, name, enabled):
        self._name = name
        self._enabled = bool(enabled)

    @property
    def name(self):
        return self._name

    @property
    def enabled(self):
        return self._enabled

    def __repr__(self):
        return ("\u2714 %s" if self._enabled else "\u2716 %s") % self._name


def _elf_sections(path):
    """{section name: (offset, size)} of a 64-bit little-endian ELF file; {} if it is not one."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}, data
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]
    sections = {}
    for name_index, _type, _flags, _addr, offset, size in headers:
        end = data.index(b"\0", names_offset + name_index)
        sections[data[names_offset + name_index:end].decode()] = (offset, size)
    return sections, data


def _elf_facts(path):
    """(the DT_NEEDED library names, whether it has .debug_info) of the ELF file at `path`."""
    try:
        sections, data = _elf_sections(path)
    except (OSError, struct.error, ValueError, IndexError):
        return [], False
    needed = []
    if ".dynamic" in sections and ".dynstr" in sections:
        dyn_offset, dyn_size = sections[".dynamic"]
        str_offset = sections[".dynstr"][0]
        for i in range(dyn_size // 16):
            tag, value = struct.unpack_from("<qQ", data, dyn_offset + 16 * i)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                end = data.index(b"\0", str_offset + value)
                needed.append(data[str_offset + value:end].decode())
    return needed, ".debug_info" in sections


def _loaded_library(name_part):
    """The path of the mapped shared library whose file name contains `name_part`, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith(name_part):
                    return path
    except OSError:
        pass
    return None


def _plugin_present(file_name, variable, directory):
    """Whether nanomx would find the plugin: $variable's path alone when it is set, else the
    file beside libnanomx.so (the dynamic linker's search path is not probed)."""
    forced = os.environ.get(variable)
    if forced:
        return os.path.isfile(forced)
    return directory is not None and os.path.isfile(os.path.join(directory, file_name))


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _detect():
    """{feature name: enabled} for the library this process loaded."""
    library = _loaded_library("libnanomx.so")
    extension = getattr(_LIB, "__file__", None)
    # The library holds the code; a build that links it statically has only the extension.
    needed, debug = _elf_facts(library or extension) if (library or extension) else ([], False)
    if library and extension:
        needed += _elf_facts(extension)[0]
    directory = os.path.dirname(library) if library else (
        os.path.dirname(extension) if extension else None)
    flags = _cpu_flags()
    ops = set(_LIB.list_op_names())
    from .context import num_gpus
    enabled = dict(_FIXED)
    enabled["CUDA"] = num_gpus() > 0
    for feature, flag in _CPU_FLAGS.items():
        enabled[feature] = flag in flags
    for feature, prefixes in _LINKED.items():
        enabled[feature] = any(re.match("|".join(map(re.escape, prefixes)), n) for n in needed)
    enabled["OPENCV"] = enabled["OPENCV"] and _plugin_present(
        "libnanomx_imgcodecs.so", "NANOMX_IMGCODECS_LIBRARY", directory)
    enabled["DIST_KVSTORE"] = _plugin_present(
        "libnanomx_kvstore_mpi.so", "NANOMX_KVSTORE_MPI_LIBRARY", directory)
    enabled["LAPACK"] = bool(ops & {"_linalg_potrf", "linalg_potrf", "_linalg_gelqf"})
    enabled["DEBUG"] = debug
    return enabled


def feature_list():
    """The features of this build as a list of Feature, in MXNet's order."""
    enabled = _detect()
    return [Feature(name, enabled[name]) for name in _FEATURE_NAMES]


class Features(collections.OrderedDict):
    """The features by name (an OrderedDict of Feature); one instance per process, made on
    first use."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super(Features, cls).__new__(cls)
            super(Features, cls.instance).__init__([(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # the singleton is filled once, in __new__
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether `feature_name` (any case) is on; RuntimeError naming the known features when
        the name is not one of them."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError("Feature '%s' is unknown, known features are: %s"
                               % (name, list(self.keys())))
        return self[name].enabled
