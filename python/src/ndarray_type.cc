#include "ndarray_type.h"

#include <structmember.h>

#include <algorithm>
#include <vector>

namespace nanomx_python {
namespace {

PyTypeObject* base_type = nullptr;
PyTypeObject* ndarray_class = nullptr;  // nanomx.ndarray.NDArray
PyObject* numeric_types = nullptr;      // (int, float, numpy.generic)

// The operators of MXNet 1.x's NDArray arithmetic (python/mxnet/ndarray/ndarray.py in MXNet 1.9.1).
struct ArithmeticOps {
  OpHandle add, sub, mul, div;                       // broadcast_*: two arrays
  OpHandle plus, minus, rminus, times, over, rover;  // _*_scalar: an array and a number
} ops;

NDArrayHandle handle_of(PyObject* object) {
  return reinterpret_cast<NDArrayObject*>(object)->handle;
}

bool is_number(PyObject* object) {
  if (PyFloat_CheckExact(object) || PyLong_CheckExact(object)) return true;
  if (numeric_types == nullptr) return false;
  const int result = PyObject_IsInstance(object, numeric_types);
  if (result < 0) PyErr_Clear();
  return result > 0;
}

// The scalar attribute as MXNet's Python sends it: str(float(value)).
PyObject* scalar_text(PyObject* number) {
  const double value = PyFloat_AsDouble(number);
  if (value == -1.0 && PyErr_Occurred()) return nullptr;
  char* text = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
  if (text == nullptr) return nullptr;
  PyObject* result = PyUnicode_FromString(text);
  PyMem_Free(text);
  return result;
}

PyObject* invoke_with_scalar(OpHandle op, PyObject* array, PyObject* number, PyObject* out) {
  PyObject* text = scalar_text(number);
  if (text == nullptr) return nullptr;
  static const char* const kKeys[] = {"scalar"};
  const char* vals[] = {PyUnicode_AsUTF8(text)};
  PyObject* result = invoke_operator(op, &array, 1, kKeys, vals, 1, out);
  Py_DECREF(text);
  return result;
}

// lhs <op> rhs for the type slots: two arrays, array and number, or number and array (the
// reversed operator); NotImplemented for anything else, so Python raises its TypeError.
PyObject* binary(PyObject* lhs, PyObject* rhs, OpHandle array_op, OpHandle scalar_op,
                 OpHandle reversed_op, bool in_place) {
  const bool lhs_array = is_ndarray(lhs), rhs_array = is_ndarray(rhs);
  PyObject* out = nullptr;
  if (in_place) {
    if (!lhs_array) Py_RETURN_NOTIMPLEMENTED;
    if (!reinterpret_cast<NDArrayObject*>(lhs)->writable) {
      PyErr_SetString(PyExc_ValueError, "trying to write into a readonly NDArray");
      return nullptr;
    }
    out = lhs;
  }
  if (lhs_array && rhs_array) {
    PyObject* inputs[] = {lhs, rhs};
    return invoke_operator(array_op, inputs, 2, nullptr, nullptr, 0, out);
  }
  if (lhs_array && is_number(rhs)) return invoke_with_scalar(scalar_op, lhs, rhs, out);
  if (rhs_array && !in_place && is_number(lhs)) {
    return invoke_with_scalar(reversed_op, rhs, lhs, nullptr);
  }
  Py_RETURN_NOTIMPLEMENTED;
}

PyObject* nb_add(PyObject* a, PyObject* b) {
  return binary(a, b, ops.add, ops.plus, ops.plus, false);
}
PyObject* nb_subtract(PyObject* a, PyObject* b) {
  return binary(a, b, ops.sub, ops.minus, ops.rminus, false);
}
PyObject* nb_multiply(PyObject* a, PyObject* b) {
  return binary(a, b, ops.mul, ops.times, ops.times, false);
}
PyObject* nb_true_divide(PyObject* a, PyObject* b) {
  return binary(a, b, ops.div, ops.over, ops.rover, false);
}
PyObject* nb_inplace_add(PyObject* a, PyObject* b) {
  return binary(a, b, ops.add, ops.plus, nullptr, true);
}
PyObject* nb_inplace_subtract(PyObject* a, PyObject* b) {
  return binary(a, b, ops.sub, ops.minus, nullptr, true);
}
PyObject* nb_inplace_multiply(PyObject* a, PyObject* b) {
  return binary(a, b, ops.mul, ops.times, nullptr, true);
}
PyObject* nb_inplace_true_divide(PyObject* a, PyObject* b) {
  return binary(a, b, ops.div, ops.over, nullptr, true);
}
// -x is _mul_scalar(x, scalar=-1.0), a new array (never in place).
PyObject* nb_negative(PyObject* a) {
  static const char* const kKeys[] = {"scalar"};
  static const char* const kVals[] = {"-1.0"};
  return invoke_operator(ops.times, &a, 1, kKeys, kVals, 1, nullptr);
}

PyObject* base_new(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<NDArrayObject*>(type->tp_alloc(type, 0));
  if (self != nullptr) {
    self->handle = nullptr;
    self->writable = true;
  }
  return reinterpret_cast<PyObject*>(self);
}

// NDArray(handle, writable=True): handle is an int from the C API, or None.
int base_init(PyObject* object, PyObject* args, PyObject* kwargs) {
  static const char* kNames[] = {"handle", "writable", nullptr};
  PyObject* handle = Py_None;
  int writable = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:NDArray", const_cast<char**>(kNames), &handle,
                                   &writable)) {
    return -1;
  }
  auto* self = reinterpret_cast<NDArrayObject*>(object);
  if (handle != Py_None && !PyLong_Check(handle)) {
    PyErr_SetString(PyExc_TypeError,
                    "NDArray(handle): handle must be an int from the C API or None");
    return -1;
  }
  void* pointer = handle == Py_None ? nullptr : PyLong_AsVoidPtr(handle);
  if (pointer == nullptr && PyErr_Occurred()) return -1;
  self->handle = pointer;
  self->writable = writable != 0;
  return 0;
}

void base_dealloc(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  auto* self = reinterpret_cast<NDArrayObject*>(object);
  if (self->handle != nullptr) {
    // A handle the library never gave out (NDArray(12345)) has nothing to free: the C API
    // says so and the message is dropped, since a destructor cannot raise.
    MXNDArrayFree(self->handle);
    self->handle = nullptr;
  }
  type->tp_free(object);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

PyObject* get_handle(PyObject* object, void*) {
  NDArrayHandle handle = handle_of(object);
  if (handle == nullptr) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(handle);
}

// Replaces the handle without freeing the old one (the caller owns both).
int set_handle(PyObject* object, PyObject* value, void*) {
  if (value == nullptr || value == Py_None) {
    reinterpret_cast<NDArrayObject*>(object)->handle = nullptr;
    return 0;
  }
  if (!PyLong_Check(value)) {
    PyErr_SetString(PyExc_TypeError, "NDArray.handle must be an int from the C API or None");
    return -1;
  }
  void* pointer = PyLong_AsVoidPtr(value);
  if (pointer == nullptr && PyErr_Occurred()) return -1;
  reinterpret_cast<NDArrayObject*>(object)->handle = pointer;
  return 0;
}

PyObject* get_writable(PyObject* object, void*) {
  return PyBool_FromLong(reinterpret_cast<NDArrayObject*>(object)->writable);
}

int set_writable(PyObject* object, PyObject* value, void*) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "NDArray.writable cannot be deleted");
    return -1;
  }
  const int truth = PyObject_IsTrue(value);
  if (truth < 0) return -1;
  reinterpret_cast<NDArrayObject*>(object)->writable = truth != 0;
  return 0;
}

PyGetSetDef getset[] = {
    {"handle", get_handle, set_handle, "the C API handle (an int), or None", nullptr},
    {"writable", get_writable, set_writable, "whether in-place writes are allowed", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

OpHandle op_handle(const char* name) {
  OpHandle handle = nullptr;
  if (NNGetOpHandle(name, &handle) != 0) {
    set_error_from_c_api();
    return nullptr;
  }
  return handle;
}

// Python sequence of NDArrays -> handles (borrowed objects stay alive in `keep`).
bool arrays_from(PyObject* sequence, std::vector<PyObject*>& out, PyObject*& keep,
                 const char* what) {
  keep = PySequence_Fast(sequence, what);
  if (keep == nullptr) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(keep);
  PyObject** items = PySequence_Fast_ITEMS(keep);
  out.assign(items, items + n);
  for (PyObject* item : out) {
    if (!is_ndarray(item)) {
      PyErr_Format(PyExc_TypeError, "%s, found %s", what, Py_TYPE(item)->tp_name);
      return false;
    }
  }
  return true;
}

}  // namespace

bool is_ndarray(PyObject* object) {
  return base_type != nullptr && PyObject_TypeCheck(object, base_type);
}

PyObject* wrap_handle(NDArrayHandle handle) {
  PyTypeObject* cls = ndarray_class != nullptr ? ndarray_class : base_type;
  PyObject* object = cls->tp_alloc(cls, 0);
  if (object == nullptr) {
    MXNDArrayFree(handle);
    return nullptr;
  }
  auto* self = reinterpret_cast<NDArrayObject*>(object);
  self->handle = handle;
  self->writable = true;
  return object;
}

PyObject* invoke_operator(OpHandle op, PyObject* const* inputs, Py_ssize_t num_inputs,
                          const char* const* keys, const char* const* vals, int num_params,
                          PyObject* out) {
  NDArrayHandle in_handles[8];
  std::vector<NDArrayHandle> many;
  NDArrayHandle* in = in_handles;
  if (num_inputs > 8) {
    many.resize(static_cast<size_t>(num_inputs));
    in = many.data();
  }
  for (Py_ssize_t i = 0; i < num_inputs; ++i) {
    if (!is_ndarray(inputs[i])) {
      PyErr_Format(PyExc_TypeError, "operator inputs must be NDArrays, found %s",
                   Py_TYPE(inputs[i])->tp_name);
      return nullptr;
    }
    in[i] = handle_of(inputs[i]);
  }
  int num_outputs = 0;
  NDArrayHandle* outputs = nullptr;
  std::vector<NDArrayHandle> given;
  std::vector<PyObject*> out_items;
  PyObject* keep_out = nullptr;
  if (out != nullptr && out != Py_None) {
    if (is_ndarray(out)) {
      given.push_back(handle_of(out));
    } else {
      if (!arrays_from(out, out_items, keep_out, "out must be an NDArray or a list of them")) {
        Py_XDECREF(keep_out);
        return nullptr;
      }
      for (PyObject* item : out_items) given.push_back(handle_of(item));
      Py_DECREF(keep_out);
    }
    num_outputs = static_cast<int>(given.size());
    outputs = given.data();
  }
  const int rc =
      MXImperativeInvoke(op, static_cast<int>(num_inputs), in, &num_outputs, &outputs, num_params,
                         const_cast<const char**>(keys), const_cast<const char**>(vals));
  if (rc != 0) {
    set_error_from_c_api();
    return nullptr;
  }
  if (out != nullptr && out != Py_None) {
    Py_INCREF(out);
    return out;
  }
  if (num_outputs == 1) return wrap_handle(outputs[0]);
  // Copy the handles first: the C API's list is reused by the next call on this thread.
  std::vector<NDArrayHandle> results(outputs, outputs + num_outputs);
  PyObject* list = PyList_New(num_outputs);
  if (list == nullptr) {
    for (NDArrayHandle h : results) MXNDArrayFree(h);
    return nullptr;
  }
  for (int i = 0; i < num_outputs; ++i) {
    PyObject* item = wrap_handle(results[static_cast<size_t>(i)]);
    if (item == nullptr) {
      for (int j = i + 1; j < num_outputs; ++j) MXNDArrayFree(results[static_cast<size_t>(j)]);
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

// ---- the buffer protocol (issue 11; beyond MXNet 1.9.1): memoryview(a) ----------------------
// A read-only snapshot of the values (the engine may still write the array, so the exporter
// waits for pending writes and copies): one block holding the shape, the strides and the data.
struct BufferBlock {
  std::vector<Py_ssize_t> shape, strides;
  std::vector<unsigned char> data;
};

const char* buffer_format(int type_code, Py_ssize_t* itemsize) {
  struct Entry {
    int code;
    const char* format;
    Py_ssize_t size;
  };
  static const Entry kFormats[] = {{0, "f", 4}, {1, "d", 8}, {2, "e", 2}, {3, "B", 1},
                                   {4, "i", 4}, {5, "b", 1}, {6, "q", 8}};
  for (const Entry& e : kFormats) {
    if (e.code == type_code) {
      *itemsize = e.size;
      return e.format;
    }
  }
  return nullptr;
}

int bf_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "NDArray exports a read-only snapshot of its values (write with a[...] = v)");
    return -1;
  }
  NDArrayHandle h = handle_of(self);
  if (h == nullptr) {
    PyErr_SetString(PyExc_BufferError, "NDArray without a handle has no values to export");
    return -1;
  }
  int ndim = 0, type_code = 0;
  const int64_t* dims = nullptr;
  if (MXNDArrayGetShapeEx64(h, &ndim, &dims) != 0 || MXNDArrayGetDType(h, &type_code) != 0) {
    set_error_from_c_api();
    return -1;
  }
  Py_ssize_t itemsize = 0;
  const char* format = buffer_format(type_code, &itemsize);
  if (format == nullptr) {
    PyErr_Format(PyExc_BufferError, "NDArray dtype code %d has no buffer format", type_code);
    return -1;
  }
  auto* block = new BufferBlock;
  size_t elements = 1;
  for (int i = 0; i < ndim; ++i) {
    block->shape.push_back(static_cast<Py_ssize_t>(dims[i]));
    elements *= static_cast<size_t>(dims[i]);
  }
  block->strides.assign(static_cast<size_t>(ndim), itemsize);
  for (int i = ndim - 2; i >= 0; --i) {
    block->strides[static_cast<size_t>(i)] =
        block->strides[static_cast<size_t>(i) + 1] * block->shape[static_cast<size_t>(i) + 1];
  }
  block->data.resize(std::max<size_t>(elements * static_cast<size_t>(itemsize), 1));
  int rc = 0;
  Py_BEGIN_ALLOW_THREADS rc = MXNDArraySyncCopyToCPU(h, block->data.data(), elements);
  Py_END_ALLOW_THREADS if (rc != 0) {
    delete block;
    set_error_from_c_api();
    return -1;
  }
  view->buf = block->data.data();
  view->obj = self;
  Py_INCREF(self);
  view->len = static_cast<Py_ssize_t>(elements) * itemsize;
  view->readonly = 1;
  view->itemsize = itemsize;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format) : nullptr;
  view->ndim = ndim;
  view->shape = (flags & PyBUF_ND) ? block->shape.data() : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? block->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = block;
  return 0;
}

void bf_releasebuffer(PyObject*, Py_buffer* view) {
  delete static_cast<BufferBlock*>(view->internal);
}

bool register_ndarray_class(PyObject* cls, PyObject* numbers) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), base_type)) {
    PyErr_SetString(PyExc_TypeError, "set_ndarray_class expects a subclass of NDArrayBase");
    return false;
  }
  ArithmeticOps found{};
  struct Entry {
    OpHandle* slot;
    const char* name;
  } entries[] = {{&found.add, "broadcast_add"},     {&found.sub, "broadcast_sub"},
                 {&found.mul, "broadcast_mul"},     {&found.div, "broadcast_div"},
                 {&found.plus, "_plus_scalar"},     {&found.minus, "_minus_scalar"},
                 {&found.rminus, "_rminus_scalar"}, {&found.times, "_mul_scalar"},
                 {&found.over, "_div_scalar"},      {&found.rover, "_rdiv_scalar"}};
  for (const Entry& e : entries) {
    *e.slot = op_handle(e.name);
    if (*e.slot == nullptr) return false;
  }
  ops = found;
  Py_INCREF(cls);
  Py_XDECREF(reinterpret_cast<PyObject*>(ndarray_class));
  ndarray_class = reinterpret_cast<PyTypeObject*>(cls);
  Py_INCREF(numbers);
  Py_XDECREF(numeric_types);
  numeric_types = numbers;
  return true;
}

PyTypeObject* create_ndarray_base_type() {
  static PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>("The C part of NDArray: its handle and arithmetic.")},
      {Py_bf_getbuffer, reinterpret_cast<void*>(bf_getbuffer)},
      {Py_bf_releasebuffer, reinterpret_cast<void*>(bf_releasebuffer)},
      {Py_tp_new, reinterpret_cast<void*>(base_new)},
      {Py_tp_init, reinterpret_cast<void*>(base_init)},
      {Py_tp_dealloc, reinterpret_cast<void*>(base_dealloc)},
      {Py_tp_getset, getset},
      {Py_nb_add, reinterpret_cast<void*>(nb_add)},
      {Py_nb_subtract, reinterpret_cast<void*>(nb_subtract)},
      {Py_nb_multiply, reinterpret_cast<void*>(nb_multiply)},
      {Py_nb_true_divide, reinterpret_cast<void*>(nb_true_divide)},
      {Py_nb_inplace_add, reinterpret_cast<void*>(nb_inplace_add)},
      {Py_nb_inplace_subtract, reinterpret_cast<void*>(nb_inplace_subtract)},
      {Py_nb_inplace_multiply, reinterpret_cast<void*>(nb_inplace_multiply)},
      {Py_nb_inplace_true_divide, reinterpret_cast<void*>(nb_inplace_true_divide)},
      {Py_nb_negative, reinterpret_cast<void*>(nb_negative)},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      "nanomx._capi.NDArrayBase",
      sizeof(NDArrayObject),
      0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
      slots,
  };
  base_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  return base_type;
}

}  // namespace nanomx_python
