// nanomx._capi's data input functions: thin wrappers over nanomx/c_api_io.h (RecordIO, image
// decode/encode/resize, the image pipeline, im2rec). nanomx/recordio.py, nanomx/image and
// nanomx/io build MXNet's classes on them. Handles are ints; the GIL is released while C++ reads,
// decodes or waits for a batch.
#include "capi_io.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "capi_common.h"
#include "nanomx/c_api.h"

namespace py = pybind11;

namespace {

using nanomx_python::as_int;
using nanomx_python::check;
using nanomx_python::check_unlocked;
using nanomx_python::handle;
using nanomx_python::pointers;

}  // namespace

void nanomx_python::add_io_functions(py::module_& m) {
  m.def("recordio_writer_create", [](const std::string& uri) {
    RecordIOHandle h = nullptr;
    check(MXRecordIOWriterCreate(uri.c_str(), &h));
    return as_int(h);
  });
  m.def("recordio_writer_free", [](uintptr_t h) { check(MXRecordIOWriterFree(handle(h))); });
  m.def("recordio_writer_write", [](uintptr_t h, py::buffer data) {
    py::buffer_info info = data.request();
    const size_t bytes = static_cast<size_t>(info.size * info.itemsize);
    check_unlocked([&] {
      return MXRecordIOWriterWriteRecord(handle(h), static_cast<const char*>(info.ptr), bytes);
    });
  });
  m.def("recordio_writer_tell", [](uintptr_t h) {
    size_t pos = 0;
    check(MXRecordIOWriterTell(handle(h), &pos));
    return pos;
  });
  m.def("recordio_reader_create", [](const std::string& uri) {
    RecordIOHandle h = nullptr;
    check(MXRecordIOReaderCreate(uri.c_str(), &h));
    return as_int(h);
  });
  m.def("recordio_reader_free", [](uintptr_t h) { check(MXRecordIOReaderFree(handle(h))); });
  m.def("recordio_reader_read", [](uintptr_t h) -> py::object {
    const char* buf = nullptr;
    size_t size = 0;
    check_unlocked([&] { return MXRecordIOReaderReadRecord(handle(h), &buf, &size); });
    if (buf == nullptr) return py::none();
    return py::bytes(buf, size);
  });
  m.def("recordio_reader_seek",
        [](uintptr_t h, size_t pos) { check(MXRecordIOReaderSeek(handle(h), pos)); });
  m.def("recordio_reader_tell", [](uintptr_t h) {
    size_t pos = 0;
    check(MXRecordIOReaderTell(handle(h), &pos));
    return pos;
  });
  m.def("image_decode", [](py::buffer data, int flag, int to_rgb) {
    py::buffer_info info = data.request();
    const size_t bytes = static_cast<size_t>(info.size * info.itemsize);
    NDArrayHandle out = nullptr;
    check_unlocked([&] { return NNImageDecode(info.ptr, bytes, flag, to_rgb, &out); });
    return as_int(out);
  });
  // `pixels`: a C-contiguous uint8 (H, W) or (H, W, C) buffer.
  m.def("image_encode", [](py::buffer pixels, const std::string& ext, int quality) {
    py::buffer_info info = pixels.request();
    if (info.itemsize != 1 || (info.ndim != 2 && info.ndim != 3)) {
      throw py::value_error("imencode: the image must be a uint8 (H, W) or (H, W, C) array");
    }
    const int h = static_cast<int>(info.shape[0]), w = static_cast<int>(info.shape[1]);
    const int c = info.ndim == 3 ? static_cast<int>(info.shape[2]) : 1;
    const char* buf = nullptr;
    size_t size = 0;
    check_unlocked(
        [&] { return NNImageEncode(info.ptr, h, w, c, ext.c_str(), quality, &buf, &size); });
    return py::bytes(buf, size);
  });
  m.def("image_resize", [](uintptr_t src, int w, int h, int interp) {
    NDArrayHandle out = nullptr;
    check_unlocked([&] { return NNImageResize(handle(src), w, h, interp, &out); });
    return as_int(out);
  });
  m.def("image_iter_create",
        [](const std::vector<std::string>& keys, const std::vector<std::string>& vals) {
          if (keys.size() != vals.size()) throw py::value_error("keys and vals differ in length");
          auto k = pointers(keys);
          auto v = pointers(vals);
          DataIterHandle h = nullptr;
          check_unlocked([&] {
            return NNImageIterCreate(static_cast<uint32_t>(k.size()), k.data(), v.data(), &h);
          });
          return as_int(h);
        });
  m.def("image_iter_free",
        [](uintptr_t h) { check_unlocked([&] { return NNImageIterFree(handle(h)); }); });
  m.def("image_iter_next", [](uintptr_t h) -> py::object {
    int has_next = 0, pad = 0;
    NDArrayHandle data = nullptr, label = nullptr;
    check_unlocked([&] { return NNImageIterNext(handle(h), &has_next, &data, &label, &pad); });
    if (!has_next) return py::none();
    return py::make_tuple(as_int(data), as_int(label), pad);
  });
  m.def("image_iter_reset", [](uintptr_t h, int hard) {
    check_unlocked([&] { return NNImageIterReset(handle(h), hard); });
  });
  m.def("image_iter_num_items", [](uintptr_t h) {
    uint64_t n = 0;
    check(NNImageIterNumItems(handle(h), &n));
    return n;
  });
  m.def("im2rec", [](const std::vector<std::string>& argv) {
    auto a = pointers(argv);
    int code = 0;
    check_unlocked([&] { return NNIm2Rec(static_cast<int>(a.size()), a.data(), &code); });
    return code;
  });
}
