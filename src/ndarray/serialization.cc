// MXNet 1.x binary formats (docs/mxnet-compat.md#file-formats): the single-array blob and the
// list/dict (.params) file. Little-endian, field by field, no padding.
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "nanomx/error.h"
#include "nanomx/ndarray.h"
#include "profiler/hooks.h"

namespace nanomx {
namespace {

static_assert(std::endian::native == std::endian::little, "the formats are little-endian");

constexpr uint32_t kMagicV1 = 0xF993FAC8u;
constexpr uint32_t kMagicV2 = 0xF993FAC9u;
constexpr uint32_t kMagicV3 = 0xF993FACAu;
constexpr uint64_t kListMagic = 0x112;
constexpr int32_t kMaxDims = 32;

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

class Reader {
 public:
  Reader(const void* data, size_t size, const std::string& source)
      : data_(static_cast<const char*>(data)), size_(size), source_(source) {}

  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  void need(uint64_t bytes, const char* what) const {
    NANOMX_CHECK(bytes <= size_ - pos_)
        << source_ << ": truncated at byte offset " << pos_ << ": expected " << what << " ("
        << bytes << " bytes), but only " << (size_ - pos_) << " bytes remain";
  }
  const char* take(size_t bytes, const char* what) {
    need(bytes, what);
    const char* p = data_ + pos_;
    pos_ += bytes;
    return p;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  [[noreturn]] void fail(size_t at, const std::string& message) const {
    NANOMX_THROW() << source_ << ": corrupt data at byte offset " << at << ": " << message;
    throw;  // unreachable
  }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& source_;
};

void write_shape(std::string& out, const Shape& shape) {
  put<int32_t>(out, shape.ndim());
  for (int64_t d : shape.dims()) put<int64_t>(out, d);
}

NDArray read_blob(Reader& in) {
  const size_t start = in.pos();
  const uint32_t magic = in.get<uint32_t>("array magic or ndim");
  Shape shape;
  if (magic == kMagicV2 || magic == kMagicV3) {
    if (magic == kMagicV3) {
      in.fail(start,
              "array blob in NumPy-shape format (magic 0xF993FACA); only MXNet 1.x blobs "
              "(0xF993FAC9, 0xF993FAC8, legacy) are supported");
    }
    const size_t at = in.pos();
    const int32_t stype = in.get<int32_t>("storage type");
    if (stype != 0) {
      in.fail(at, "storage type " + std::to_string(stype) +
                      " is not supported (expected 0, dense); sparse arrays cannot be loaded");
    }
  }
  if (magic == kMagicV1 || magic == kMagicV2) {
    const size_t at = in.pos();
    const int32_t ndim = in.get<int32_t>("shape ndim");
    if (ndim < 0 || ndim > kMaxDims) {
      in.fail(at, "shape ndim " + std::to_string(ndim) + " (expected 0.." +
                      std::to_string(kMaxDims) + ")");
    }
    for (int32_t i = 0; i < ndim; ++i) {
      const size_t dim_at = in.pos();
      const int64_t d = in.get<int64_t>("shape dimension");
      if (d < 0) in.fail(dim_at, "negative shape dimension " + std::to_string(d));
      shape.push_back(d);
    }
  } else {
    // Legacy: the first word is the ndim of a uint32 shape.
    if (magic > static_cast<uint32_t>(kMaxDims)) {
      in.fail(
          start, "unknown array magic 0x" + [&] {
            std::ostringstream os;
            os << std::hex << magic;
            return os.str();
          }() + " (expected 0xF993FAC9, 0xF993FAC8 or a legacy ndim)");
    }
    for (uint32_t i = 0; i < magic; ++i) {
      shape.push_back(in.get<uint32_t>("shape dimension"));
    }
  }
  if (shape.ndim() == 0) return NDArray();  // a none array: the blob ends here
  const size_t ctx_at = in.pos();
  const int32_t dev_type = in.get<int32_t>("context device type");
  const int32_t dev_id = in.get<int32_t>("context device id");
  if (dev_type != 1 && dev_type != 2 && dev_type != 3 && dev_type != 5) {
    in.fail(ctx_at, "device type " + std::to_string(dev_type) +
                        " (expected 1 cpu, 2 gpu, 3 cpu_pinned or 5 cpu_shared)");
  }
  if (dev_id < 0) in.fail(ctx_at + 4, "negative device id " + std::to_string(dev_id));
  // No GPU in this build: GPU arrays load onto the CPU. CPU ids beyond this machine's rows, too.
  Context ctx = Context::cpu(0);
  if (dev_type != 2 && (dev_type != 1 || dev_id < profiler::cpu_device_count())) {
    ctx = {static_cast<DeviceType>(dev_type), dev_id};
  }
  const size_t type_at = in.pos();
  const int32_t type_flag = in.get<int32_t>("dtype flag");
  if (!dtype_valid(type_flag)) {
    in.fail(type_at, "dtype flag " + std::to_string(type_flag) +
                         " is not supported (expected 0 float32, 1 float64, 2 float16, 3 uint8, "
                         "4 int32, 5 int8 or 6 int64)");
  }
  const DType dtype = static_cast<DType>(type_flag);
  uint64_t elements = 1;
  for (int64_t d : shape.dims()) {
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) {
      in.fail(start, "shape " + shape.str() + " is too large");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, dtype_size(dtype), &bytes)) {
    in.fail(start, "shape " + shape.str() + " is too large");
  }
  in.need(bytes, "array data");  // before allocating: a corrupt shape never allocates
  NDArray array(shape, ctx, dtype);
  const char* src = in.take(bytes, "array data");
  if (bytes) std::memcpy(array.data(), src, bytes);  // fresh array: nothing pending on it
  return array;
}

}  // namespace

void save_blob(const NDArray& array, std::string& out) {
  put<uint32_t>(out, kMagicV2);
  put<int32_t>(out, 0);  // dense
  if (array.is_none()) {
    put<int32_t>(out, 0);  // ndim 0: none
    return;
  }
  NANOMX_CHECK(array.shape().ndim() > 0)
      << "save: a rank-0 array cannot be stored in the MXNet 1.x format (ndim 0 means none); "
         "reshape it to (1,)";
  write_shape(out, array.shape());
  const Context ctx = array.ctx();
  put<int32_t>(out, static_cast<int32_t>(ctx.dev_type));
  put<int32_t>(out, ctx.dev_id);
  put<int32_t>(out, static_cast<int32_t>(array.dtype()));
  const size_t at = out.size();
  out.resize(at + array.nbytes());
  array.sync_copy_to_cpu(out.data() + at, array.nbytes());
}

std::string save_list(const std::vector<NDArray>& arrays, const std::vector<std::string>& names) {
  NANOMX_CHECK(names.empty() || names.size() == arrays.size())
      << "save: " << names.size() << " names for " << arrays.size() << " arrays";
  std::string out;
  put<uint64_t>(out, kListMagic);
  put<uint64_t>(out, 0);
  put<uint64_t>(out, arrays.size());
  for (const NDArray& a : arrays) save_blob(a, out);
  put<uint64_t>(out, names.size());
  for (const std::string& name : names) {
    put<uint64_t>(out, name.size());
    out += name;
  }
  return out;
}

void save_file(const std::string& filename, const std::vector<NDArray>& arrays,
               const std::vector<std::string>& names) {
  const std::string bytes = save_list(arrays, names);
  std::ofstream file(filename, std::ios::binary | std::ios::trunc);
  NANOMX_CHECK(file.good()) << "save: cannot open '" << filename
                            << "' for writing: " << std::strerror(errno);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  NANOMX_CHECK(!file.fail()) << "save: writing '" << filename << "' failed";
}

NDArray load_blob(const void* data, size_t size, const std::string& source) {
  NANOMX_CHECK(data != nullptr || size == 0) << source << ": null data";
  Reader in(data, size, source);
  return read_blob(in);
}

LoadedArrays load_list(const void* data, size_t size, const std::string& source) {
  NANOMX_CHECK(data != nullptr || size == 0) << source << ": null data";
  Reader in(data, size, source);
  const uint64_t magic = in.get<uint64_t>("list header 0x112");
  if (magic != kListMagic) {
    std::ostringstream os;
    os << "list header 0x" << std::hex << magic << " (expected 0x112: not an NDArray list file)";
    in.fail(0, os.str());
  }
  in.get<uint64_t>("reserved field");
  const size_t count_at = in.pos();
  const uint64_t count = in.get<uint64_t>("array count");
  if (count > in.remaining() / 4) {  // every blob is at least 4 bytes
    in.fail(count_at, "array count " + std::to_string(count) + " exceeds what the remaining " +
                          std::to_string(in.remaining()) + " bytes can hold (expected at most " +
                          std::to_string(in.remaining() / 4) + ")");
  }
  LoadedArrays result;
  result.arrays.reserve(count);
  for (uint64_t i = 0; i < count; ++i) result.arrays.push_back(read_blob(in));
  const size_t names_at = in.pos();
  const uint64_t name_count = in.get<uint64_t>("name count");
  if (name_count != 0 && name_count != count) {
    in.fail(names_at, "name count " + std::to_string(name_count) + " (expected 0 or " +
                          std::to_string(count) + ", the array count)");
  }
  for (uint64_t i = 0; i < name_count; ++i) {
    const uint64_t length = in.get<uint64_t>("name length");
    in.need(length, "name bytes");
    const char* p = in.take(static_cast<size_t>(length), "name bytes");
    result.names.emplace_back(p, static_cast<size_t>(length));
  }
  // MXNet stops reading here; bytes after the names mean a damaged or concatenated file.
  if (in.remaining() != 0) {
    in.fail(in.pos(), std::to_string(in.remaining()) +
                          " trailing bytes after the last array and its names (expected the end "
                          "of the file)");
  }
  return result;
}

LoadedArrays load_file(const std::string& filename) {
  std::error_code error;
  NANOMX_CHECK(!std::filesystem::is_directory(filename, error))
      << "load: '" << filename << "' is a directory (expected an NDArray .params file)";
  std::ifstream file(filename, std::ios::binary);
  NANOMX_CHECK(file.good()) << "load: cannot open '" << filename
                            << "' for reading: " << std::strerror(errno);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  NANOMX_CHECK(!file.bad()) << "load: reading '" << filename
                            << "' failed: " << std::strerror(errno);
  return load_list(bytes.data(), bytes.size(), filename);
}

}  // namespace nanomx
