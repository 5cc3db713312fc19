// The C API of data input (nanomx/c_api_io.h): RecordIO readers and writers, image decode,
// encode and resize, the image pipeline and im2rec.
#include <algorithm>
#include <cstring>
#include <memory>
#include <opencv2/core.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "c_api/c_api_common.h"
#include "c_api/c_api_objects.h"
#include "c_api/handle_table.h"
#include "io/im2rec.h"
#include "io/image.h"
#include "io/image_record_iter.h"
#include "io/recordio.h"
#include "nanomx/c_api.h"

using nanomx::NDArray;
namespace io = nanomx::io;

namespace {

struct RecordIOObject {
  std::unique_ptr<io::RecordWriter> writer;
  std::unique_ptr<io::RecordReader> reader;
  std::string buffer;  // the last record read
};
using RecordIOTable = nanomx::c_api::HandleTable<std::unique_ptr<RecordIOObject>,
                                                 nanomx::c_api::HandleKind::kRecordIO>;
RecordIOTable& recordios() {
  static auto* table = new RecordIOTable;  // never destroyed: handles may be freed at exit
  return *table;
}
using IterTable = nanomx::c_api::HandleTable<std::unique_ptr<io::ImageRecordIter>,
                                             nanomx::c_api::HandleKind::kDataIter>;
IterTable& iters() {
  static auto* table = new IterTable;
  return *table;
}

RecordIOObject& recordio_of(RecordIOHandle h, const char* function, bool writer) {
  nanomx::c_api::check_not_null(h, function, "handle");
  RecordIOObject& o = *recordios().get(h, function, "handle");
  NANOMX_CHECK(writer ? o.writer != nullptr : o.reader != nullptr)
      << function << ": the handle is a RecordIO " << (writer ? "reader" : "writer")
      << ", expected a " << (writer ? "writer" : "reader");
  return o;
}

io::ImageRecordIter& iter_of(DataIterHandle h, const char* function) {
  nanomx::c_api::check_not_null(h, function, "iterator");
  return *iters().get(h, function, "iterator");
}

void check_out(const void* p, const char* function, const char* what) {
  nanomx::c_api::check_not_null(p, function, what);
}

// ---- The pipeline's string configuration -------------------------------------------------

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "True" || v == "true") return true;
  if (v == "0" || v == "False" || v == "false") return false;
  NANOMX_THROW() << "NNImageIterCreate: " << key << "='" << v << "' is not a boolean (0/1)";
  return false;
}

double parse_number(const std::string& key, const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  NANOMX_CHECK(!v.empty() && end == v.c_str() + v.size())
      << "NNImageIterCreate: " << key << "='" << v << "' is not a number";
  return d;
}

int parse_int(const std::string& key, const std::string& v) {
  const double d = parse_number(key, v);
  NANOMX_CHECK(d == static_cast<int>(d))
      << "NNImageIterCreate: " << key << "='" << v << "' is not an integer";
  return static_cast<int>(d);
}

// "(3, 224, 224)", "[1,2,3]" or "1,2,3".
std::vector<double> parse_list(const std::string& key, const std::string& v) {
  std::string s;
  for (char ch : v) s += (ch == '(' || ch == ')' || ch == '[' || ch == ']') ? ' ' : ch;
  std::vector<double> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (part.empty()) continue;
    out.push_back(parse_number(key, part));
  }
  return out;
}

const char* const kIterKeys[] = {
    "path_imgrec",    "path_imgidx", "path_imglist", "path_root",
    "imglist",        "batch_size",  "data_shape",   "label_width",
    "shuffle",        "part_index",  "num_parts",    "last_batch_handle",
    "seed",           "threads",     "prefetch",     "resize",
    "crop",           "min_area",    "max_area",     "min_ratio",
    "max_ratio",      "rand_mirror", "brightness",   "contrast",
    "saturation",     "hue",         "pca_noise",    "rand_gray",
    "inter_method",   "mean",        "std",          "scale",
    "reduced_decode", "dtype",       "name"};

io::ImageIterConfig parse_iter_config(uint32_t n, const char** keys, const char** vals) {
  io::ImageIterConfig c;
  bool have_shape = false;
  for (uint32_t i = 0; i < n; ++i) {
    NANOMX_CHECK(keys[i] != nullptr && vals[i] != nullptr)
        << "NNImageIterCreate: key or value " << i << " is null";
    const std::string k = keys[i], v = vals[i];
    if (k == "path_imgrec") {
      c.path_imgrec = v;
    } else if (k == "path_imgidx") {
      c.path_imgidx = v;
    } else if (k == "path_imglist") {
      c.path_imglist = v;
    } else if (k == "path_root") {
      c.path_root = v;
    } else if (k == "imglist") {
      c.imglist = io::parse_list(v, "imglist");
      c.has_imglist = true;
    } else if (k == "batch_size") {
      c.batch_size = parse_int(k, v);
    } else if (k == "data_shape") {
      const auto d = parse_list(k, v);
      NANOMX_CHECK(d.size() == 3 && d[0] > 0 && d[1] > 0 && d[2] > 0)
          << "NNImageIterCreate: data_shape '" << v << "' must be 3 positive numbers (C, H, W)";
      c.aug.channels = static_cast<int>(d[0]);
      c.aug.out_h = static_cast<int>(d[1]);
      c.aug.out_w = static_cast<int>(d[2]);
      have_shape = true;
    } else if (k == "label_width") {
      c.label_width = parse_int(k, v);
    } else if (k == "shuffle") {
      c.shuffle = parse_bool(k, v);
    } else if (k == "part_index") {
      c.part_index = parse_int(k, v);
    } else if (k == "num_parts") {
      c.num_parts = parse_int(k, v);
    } else if (k == "last_batch_handle") {
      if (v == "pad") {
        c.last_batch = io::LastBatch::kPad;
      } else if (v == "discard") {
        c.last_batch = io::LastBatch::kDiscard;
      } else if (v == "roll_over") {
        c.last_batch = io::LastBatch::kRollOver;
      } else {
        NANOMX_THROW() << "NNImageIterCreate: last_batch_handle '" << v
                       << "' is not one of pad, discard, roll_over";
      }
    } else if (k == "seed") {
      c.seed = std::stoull(v);
    } else if (k == "threads") {
      c.threads = parse_int(k, v);
    } else if (k == "prefetch") {
      c.prefetch = parse_int(k, v);
    } else if (k == "resize") {
      c.aug.resize = parse_int(k, v);
    } else if (k == "crop") {
      using Crop = io::AugmentConfig::Crop;
      if (v == "center") {
        c.aug.crop = Crop::kCenter;
      } else if (v == "random") {
        c.aug.crop = Crop::kRandom;
      } else if (v == "random_sized") {
        c.aug.crop = Crop::kRandomSized;
      } else if (v == "record") {
        c.aug.crop = Crop::kRecordIter;
      } else if (v == "record_random") {
        c.aug.crop = Crop::kRecordIter;
        c.aug.record_rand_crop = true;
      } else {
        NANOMX_THROW() << "NNImageIterCreate: crop '" << v
                       << "' is not one of center, random, random_sized, record, record_random";
      }
    } else if (k == "min_area") {
      c.aug.min_area = static_cast<float>(parse_number(k, v));
    } else if (k == "max_area") {
      c.aug.max_area = static_cast<float>(parse_number(k, v));
    } else if (k == "min_ratio") {
      c.aug.min_ratio = static_cast<float>(parse_number(k, v));
    } else if (k == "max_ratio") {
      c.aug.max_ratio = static_cast<float>(parse_number(k, v));
    } else if (k == "rand_mirror") {
      c.aug.rand_mirror = parse_bool(k, v);
    } else if (k == "brightness") {
      c.aug.brightness = static_cast<float>(parse_number(k, v));
    } else if (k == "contrast") {
      c.aug.contrast = static_cast<float>(parse_number(k, v));
    } else if (k == "saturation") {
      c.aug.saturation = static_cast<float>(parse_number(k, v));
    } else if (k == "hue") {
      c.aug.hue = static_cast<float>(parse_number(k, v));
    } else if (k == "pca_noise") {
      c.aug.pca_noise = static_cast<float>(parse_number(k, v));
    } else if (k == "rand_gray") {
      c.aug.rand_gray = static_cast<float>(parse_number(k, v));
    } else if (k == "inter_method") {
      c.aug.inter_method = parse_int(k, v);
      NANOMX_CHECK((c.aug.inter_method >= 0 && c.aug.inter_method <= 4) ||
                   c.aug.inter_method == 9 || c.aug.inter_method == 10)
          << "NNImageIterCreate: inter_method " << v << " is not 0-4, 9 or 10";
    } else if (k == "mean" || k == "std") {
      const auto d = parse_list(k, v);
      NANOMX_CHECK(d.size() == 1 || d.size() == 3)
          << "NNImageIterCreate: " << k << " '" << v << "' must have 1 or 3 values";
      float* dst = k == "mean" ? c.aug.mean : c.aug.std;
      for (int ch = 0; ch < 3; ++ch) dst[ch] = static_cast<float>(d[d.size() == 1 ? 0 : ch]);
      if (k == "std") {
        for (int ch = 0; ch < 3; ++ch) {
          NANOMX_CHECK(dst[ch] != 0) << "NNImageIterCreate: std '" << v << "' has a zero";
        }
      }
      c.aug.normalize = true;
    } else if (k == "scale") {
      c.aug.scale = static_cast<float>(parse_number(k, v));
    } else if (k == "reduced_decode") {
      c.aug.reduced_decode = parse_bool(k, v);
    } else if (k == "dtype") {
      NANOMX_CHECK(v == "float32" || v == "uint8")
          << "NNImageIterCreate: dtype '" << v << "' is not float32 or uint8";
      c.aug.uint8_out = v == "uint8";
    } else if (k == "name") {
      c.name = v;
    } else {
      std::string valid;
      for (const char* key : kIterKeys) valid += std::string(valid.empty() ? "" : ", ") + key;
      NANOMX_THROW() << "NNImageIterCreate: unknown key '" << k << "' (valid keys: " << valid
                     << ")";
    }
  }
  NANOMX_CHECK(have_shape) << "NNImageIterCreate: data_shape is required";
  return c;
}

int cv_type(int dtype, int channels, const char* function) {
  if (dtype == static_cast<int>(nanomx::DType::kUint8)) return CV_8UC(channels);
  if (dtype == static_cast<int>(nanomx::DType::kFloat32)) return CV_32FC(channels);
  NANOMX_THROW() << function << ": images must be uint8 or float32";
  return 0;
}

NDArray array_of_mat(const cv::Mat& m) {
  const bool u8 = m.depth() == CV_8U;
  NDArray out(nanomx::Shape{m.rows, m.cols, m.channels()}, nanomx::Context::cpu(0),
              u8 ? nanomx::DType::kUint8 : nanomx::DType::kFloat32);
  const size_t row = static_cast<size_t>(m.cols) * m.elemSize();
  auto* dst = static_cast<char*>(out.data());
  for (int y = 0; y < m.rows; ++y) std::memcpy(dst + y * row, m.ptr(y), row);
  return out;
}

}  // namespace

int MXRecordIOWriterCreate(const char* uri, RecordIOHandle* out) {
  NANOMX_API_BEGIN(MXRecordIOWriterCreate);
  check_out(uri, "MXRecordIOWriterCreate", "uri");
  check_out(out, "MXRecordIOWriterCreate", "out");
  auto o = std::make_unique<RecordIOObject>();
  o->writer = std::make_unique<io::RecordWriter>(uri);
  *out = recordios().emplace(std::move(o));
  NANOMX_API_END();
}

int MXRecordIOWriterFree(RecordIOHandle handle) {
  NANOMX_API_BEGIN(MXRecordIOWriterFree);
  recordio_of(handle, "MXRecordIOWriterFree", true);
  auto o = recordios().release(handle, "MXRecordIOWriterFree", "handle");
  o->writer->close();
  NANOMX_API_END();
}

int MXRecordIOWriterWriteRecord(RecordIOHandle handle, const char* buf, size_t size) {
  NANOMX_API_BEGIN(MXRecordIOWriterWriteRecord);
  RecordIOObject& o = recordio_of(handle, "MXRecordIOWriterWriteRecord", true);
  if (size > 0) check_out(buf, "MXRecordIOWriterWriteRecord", "buf");
  o.writer->write(std::string_view(buf, size));
  NANOMX_API_END();
}

int MXRecordIOWriterTell(RecordIOHandle handle, size_t* pos) {
  NANOMX_API_BEGIN(MXRecordIOWriterTell);
  RecordIOObject& o = recordio_of(handle, "MXRecordIOWriterTell", true);
  check_out(pos, "MXRecordIOWriterTell", "pos");
  *pos = o.writer->tell();
  NANOMX_API_END();
}

int MXRecordIOReaderCreate(const char* uri, RecordIOHandle* out) {
  NANOMX_API_BEGIN(MXRecordIOReaderCreate);
  check_out(uri, "MXRecordIOReaderCreate", "uri");
  check_out(out, "MXRecordIOReaderCreate", "out");
  auto o = std::make_unique<RecordIOObject>();
  o->reader = std::make_unique<io::RecordReader>(uri);
  *out = recordios().emplace(std::move(o));
  NANOMX_API_END();
}

int MXRecordIOReaderFree(RecordIOHandle handle) {
  NANOMX_API_BEGIN(MXRecordIOReaderFree);
  recordio_of(handle, "MXRecordIOReaderFree", false);
  recordios().release(handle, "MXRecordIOReaderFree", "handle");
  NANOMX_API_END();
}

int MXRecordIOReaderReadRecord(RecordIOHandle handle, const char** buf, size_t* size) {
  NANOMX_API_BEGIN(MXRecordIOReaderReadRecord);
  RecordIOObject& o = recordio_of(handle, "MXRecordIOReaderReadRecord", false);
  check_out(buf, "MXRecordIOReaderReadRecord", "buf");
  check_out(size, "MXRecordIOReaderReadRecord", "size");
  if (o.reader->read(o.buffer)) {
    *buf = o.buffer.data();
    *size = o.buffer.size();
  } else {
    *buf = nullptr;
    *size = 0;
  }
  NANOMX_API_END();
}

int MXRecordIOReaderSeek(RecordIOHandle handle, size_t pos) {
  NANOMX_API_BEGIN(MXRecordIOReaderSeek);
  recordio_of(handle, "MXRecordIOReaderSeek", false).reader->seek(pos);
  NANOMX_API_END();
}

int MXRecordIOReaderTell(RecordIOHandle handle, size_t* pos) {
  NANOMX_API_BEGIN(MXRecordIOReaderTell);
  RecordIOObject& o = recordio_of(handle, "MXRecordIOReaderTell", false);
  check_out(pos, "MXRecordIOReaderTell", "pos");
  *pos = o.reader->tell();
  NANOMX_API_END();
}

int NNImageDecode(const void* buf, size_t size, int flag, int to_rgb, NDArrayHandle* out) {
  NANOMX_API_BEGIN(NNImageDecode);
  check_out(out, "NNImageDecode", "out");
  if (size > 0) check_out(buf, "NNImageDecode", "buf");
  cv::Mat m = io::decode_image(std::string_view(static_cast<const char*>(buf), size), flag,
                               to_rgb != 0, 1, "(imdecode)");
  *out = nanomx::c_api::ndarray_to_handle(array_of_mat(m));
  NANOMX_API_END();
}

int NNImageEncode(const void* pixels, int height, int width, int channels, const char* ext,
                  int quality, const char** out_buf, size_t* out_size) {
  NANOMX_API_BEGIN(NNImageEncode);
  check_out(pixels, "NNImageEncode", "pixels");
  check_out(ext, "NNImageEncode", "ext");
  check_out(out_buf, "NNImageEncode", "out_buf");
  check_out(out_size, "NNImageEncode", "out_size");
  NANOMX_CHECK(height > 0 && width > 0 && (channels == 1 || channels == 3 || channels == 4))
      << "NNImageEncode: image shape (" << height << ", " << width << ", " << channels
      << ") must be positive with 1, 3 or 4 channels";
  const cv::Mat m(height, width, CV_8UC(channels), const_cast<void*>(pixels));
  static thread_local std::string encoded;
  encoded = io::encode_image(m, ext, quality);
  *out_buf = encoded.data();
  *out_size = encoded.size();
  NANOMX_API_END();
}

int NNImageResize(NDArrayHandle src, int w, int h, int interp, NDArrayHandle* out) {
  NANOMX_API_BEGIN(NNImageResize);
  check_out(out, "NNImageResize", "out");
  const NDArray& a = nanomx::c_api::ndarray_from_handle(src, "NNImageResize", "src");
  const auto& dims = a.shape().dims();
  NANOMX_CHECK(dims.size() == 3 && dims[2] >= 1 && dims[2] <= 4)
      << "NNImageResize: the image must be (H, W, C) with C 1 to 4, got " << a.shape().ndim()
      << " dimensions";
  a.wait_to_read();
  const cv::Mat m(static_cast<int>(dims[0]), static_cast<int>(dims[1]),
                  cv_type(static_cast<int>(a.dtype()), static_cast<int>(dims[2]), "NNImageResize"),
                  a.data());
  cv::Mat r = io::resize(m, w, h, interp);
  if (r.channels() != dims[2]) r = r.reshape(static_cast<int>(dims[2]));
  *out = nanomx::c_api::ndarray_to_handle(array_of_mat(r));
  NANOMX_API_END();
}

int NNImageIterCreate(uint32_t num_param, const char** keys, const char** vals,
                      DataIterHandle* out) {
  NANOMX_API_BEGIN(NNImageIterCreate);
  check_out(out, "NNImageIterCreate", "out");
  if (num_param > 0) {
    check_out(keys, "NNImageIterCreate", "keys");
    check_out(vals, "NNImageIterCreate", "vals");
  }
  auto it = std::make_unique<io::ImageRecordIter>(parse_iter_config(num_param, keys, vals));
  *out = iters().emplace(std::move(it));
  NANOMX_API_END();
}

int NNImageIterFree(DataIterHandle handle) {
  NANOMX_API_BEGIN(NNImageIterFree);
  iter_of(handle, "NNImageIterFree");
  auto it = iters().release(handle, "NNImageIterFree", "iterator");
  it.reset();  // joins the pipeline's threads, outside the table's lock
  NANOMX_API_END();
}

int NNImageIterNext(DataIterHandle handle, int* has_next, NDArrayHandle* data, NDArrayHandle* label,
                    int* pad) {
  NANOMX_API_BEGIN(NNImageIterNext);
  io::ImageRecordIter& it = iter_of(handle, "NNImageIterNext");
  check_out(has_next, "NNImageIterNext", "has_next");
  check_out(data, "NNImageIterNext", "data");
  check_out(label, "NNImageIterNext", "label");
  check_out(pad, "NNImageIterNext", "pad");
  io::Batch batch;
  *has_next = it.next(batch) ? 1 : 0;
  if (*has_next) {
    *data = nanomx::c_api::ndarray_to_handle(std::move(batch.data));
    *label = nanomx::c_api::ndarray_to_handle(std::move(batch.label));
    *pad = batch.pad;
  } else {
    *data = nullptr;
    *label = nullptr;
    *pad = 0;
  }
  NANOMX_API_END();
}

int NNImageIterReset(DataIterHandle handle, int hard) {
  NANOMX_API_BEGIN(NNImageIterReset);
  io::ImageRecordIter& it = iter_of(handle, "NNImageIterReset");
  if (hard) {
    it.hard_reset();
  } else {
    it.reset();
  }
  NANOMX_API_END();
}

int NNImageIterNumItems(DataIterHandle handle, uint64_t* count) {
  NANOMX_API_BEGIN(NNImageIterNumItems);
  io::ImageRecordIter& it = iter_of(handle, "NNImageIterNumItems");
  check_out(count, "NNImageIterNumItems", "count");
  *count = it.num_items();
  NANOMX_API_END();
}

int NNIm2Rec(int argc, const char** argv, int* exit_code) {
  NANOMX_API_BEGIN(NNIm2Rec);
  check_out(exit_code, "NNIm2Rec", "exit_code");
  NANOMX_CHECK(argc >= 1 && argv != nullptr) << "NNIm2Rec: argv must hold the program name";
  std::vector<std::string> args(argv + 1, argv + argc);
  *exit_code = io::im2rec_main(args);
  NANOMX_API_END();
}
