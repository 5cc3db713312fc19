// The C base type of nanomx.ndarray.NDArray (nanomx._capi.NDArrayBase) and the operator-call
// path that every NDArray result goes through.
//
// Why in C: a 10-element add from Python is dominated by interpreter work around the C API
// call (Python frames, boxing handles, building the result object, a Python __del__ per freed
// array). Here the handle lives in the object, the arithmetic operators are type slots that go
// straight to MXImperativeInvoke, results are built without running Python code, and the handle
// is freed (MXNDArrayFree) when the object dies. It still calls nothing but the C API.
#pragma once

#include <Python.h>

#include "nanomx/c_api.h"

namespace nanomx_python {

struct NDArrayObject {
  PyObject_HEAD NDArrayHandle handle;  // owned; null for an array without storage
  bool writable;
};

// Sets the pending Python exception from MXGetLastError() (as nanomx.base.MXNetError).
void set_error_from_c_api();

// Creates the base type (once, at module init); the module adds it as NDArrayBase.
PyTypeObject* create_ndarray_base_type();

// The Python subclass instances are made of (nanomx.ndarray.NDArray), and what counts as a
// number in arithmetic (int, float, numpy scalars). Looks up the arithmetic operators' handles.
// Returns false with a Python error set on failure.
bool register_ndarray_class(PyObject* cls, PyObject* numeric_types);

bool is_ndarray(PyObject* object);

// A new NDArray owning `handle`; frees the handle when the object cannot be made.
PyObject* wrap_handle(NDArrayHandle handle);

// MXImperativeInvoke on NDArray inputs. With out == nullptr: the new result (one NDArray, or a
// list when the operator has several outputs). Otherwise the results are written into `out`
// (an NDArray or a sequence of them), which is returned. Null with a Python error on failure.
PyObject* invoke_operator(OpHandle op, PyObject* const* inputs, Py_ssize_t num_inputs,
                          const char* const* keys, const char* const* vals, int num_params,
                          PyObject* out);

}  // namespace nanomx_python
