"""What a process pays for loading nanomx: the heavy optional libraries are loaded on first use,
not at import (docs/io.md, docs/cuda.md). Each case runs in a fresh interpreter, since this one
may have decoded images or run GPU code in earlier tests."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRELUDE = """
import sys
sys.path.insert(0, %r)
import numpy as np
import nanomx as mx
def mapped(name):
    with open('/proc/self/maps') as f:
        return name in f.read()
""" % os.path.join(ROOT, "python")


def run(code, **env):
    full_env = dict(os.environ, **env)
    done = subprocess.run([sys.executable, "-c", PRELUDE + code], env=full_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_cpu_work_loads_neither_cublas_nor_the_image_codecs():
    out = run("""
a = mx.nd.ones((4, 3))
b = mx.nd.dot(a, a.T)
assert b.asnumpy()[0, 0] == 3
print(mapped('libcublas'), mapped('libopencv_imgcodecs'), mapped('libnanomx_imgcodecs'))
""")
    assert out.split() == ["False", "False", "False"]


def test_the_first_non_jpeg_codec_call_loads_the_plugin():
    out = run("""
from nanomx import recordio
rgb = np.array([[[255, 0, 0], [0, 128, 255]]], dtype=np.uint8)
before = mapped('libopencv_imgcodecs')
png = recordio.unpack(recordio.pack_img(recordio.IRHeader(0, 0, 0, 0), rgb[:, :, ::-1],
                                        img_fmt='.png'))[1]
assert png[:4] == b'\\x89PNG'
np.testing.assert_array_equal(mx.img.imdecode(png).asnumpy(), rgb)
print(before, mapped('libopencv_imgcodecs'))
""")
    assert out.split() == ["False", "True"]


def test_a_missing_plugin_is_a_clear_error_and_the_process_goes_on():
    out = run("""
try:
    mx.img.imdecode(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(40))
except mx.MXNetError as e:
    print('error:', str(e).splitlines()[0])
a = mx.nd.ones((2,)) + 1
print('still works', a.asnumpy().tolist())
""", NANOMX_IMGCODECS_LIBRARY="/nonexistent/libnanomx_imgcodecs.so")
    assert "image codecs (OpenCV imgcodecs): cannot load /nonexistent/libnanomx_imgcodecs.so " \
           "(from NANOMX_IMGCODECS_LIBRARY)" in out, out
    assert "still works [2.0, 2.0]" in out, out


def test_a_missing_mpi_transport_is_a_clear_error():
    out = run("""
try:
    mx.kv.create('dist_sync')
except mx.MXNetError as e:
    print('error:', str(e).splitlines()[0])
print('mpi mapped', mapped('libmpi'), 'still works', (mx.nd.ones((2,)) * 3).asnumpy().tolist())
""", DMLC_NUM_WORKER="1", DMLC_NUM_SERVER="1", OMPI_COMM_WORLD_RANK="0",
              OMPI_COMM_WORLD_SIZE="2", NANOMX_KVSTORE_MPI_LIBRARY="/nonexistent/libx.so")
    assert "error: KVStore: the MPI transport: cannot load /nonexistent/libx.so (from " \
           "NANOMX_KVSTORE_MPI_LIBRARY)" in out, out
    assert "mpi mapped False still works [3.0, 3.0]" in out, out


def _dynamic_flags(path):
    """DT_FLAGS of an ELF64 little-endian shared object (0 when it has none)."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, path
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                 phoff + i * phentsize)
        if p_type != 2:  # PT_DYNAMIC
            continue
        for at in range(p_offset, p_offset + p_filesz, 16):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == 0:
                break
            if tag == 30:  # DT_FLAGS
                return value
    return 0


def test_the_library_needs_no_static_tls():
    # DF_STATIC_TLS made dlopen fit all of nanomx's thread-locals into glibc's small static-TLS
    # surplus; a library loaded after it that needs static TLS (libgomp: torch, PIL) then failed
    # with "cannot allocate memory in static TLS block" (src/profiler/thread_buffer.h).
    out = run("""
import re
with open('/proc/self/maps') as f:
    paths = sorted(set(re.findall(r'(/\\S*/libnanomx\\.so[.0-9]*)$', f.read(), re.M)))
print(paths[0])
""")
    library = out.strip().splitlines()[-1]
    assert _dynamic_flags(library) & 0x10 == 0, library + " is marked DF_STATIC_TLS"


def test_a_static_tls_library_loads_after_nanomx():
    out = run("""
import ctypes, ctypes.util
name = ctypes.util.find_library('gomp') or 'libgomp.so.1'
ctypes.CDLL(name)
print('loaded', name)
""")
    assert "loaded" in out, out
