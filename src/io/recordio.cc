#include "io/recordio.h"

#include <cerrno>
#include <cstring>

#include "nanomx/error.h"

namespace nanomx::io {
namespace {

constexpr uint32_t kLengthMask = (uint32_t{1} << 29) - 1;

uint32_t encode_lrec(uint32_t cflag, uint64_t length) {
  return (cflag << 29) | static_cast<uint32_t>(length);
}
uint64_t ceil4(uint64_t n) { return (n + 3) & ~uint64_t{3}; }

void store_le32(unsigned char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t load_le32(const unsigned char* in) {
  return uint32_t{in[0]} | uint32_t{in[1]} << 8 | uint32_t{in[2]} << 16 | uint32_t{in[3]} << 24;
}

}  // namespace

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  NANOMX_CHECK(file_ != nullptr) << "RecordIO: cannot open '" << path
                                 << "' for writing: " << std::strerror(errno);
}

RecordWriter::~RecordWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void RecordWriter::put(const void* data, size_t bytes) {
  NANOMX_CHECK(file_ != nullptr) << "RecordIO: write to '" << path_ << "' after close";
  if (bytes == 0) return;
  NANOMX_CHECK(std::fwrite(data, 1, bytes, file_) == bytes)
      << "RecordIO: writing '" << path_ << "' failed at byte offset " << offset_ << ": "
      << std::strerror(errno);
  offset_ += bytes;
}

void RecordWriter::write(std::string_view record) {
  NANOMX_CHECK(record.size() <= kMaxRecordLength)
      << "RecordIO: a record of " << record.size() << " bytes for '" << path_
      << "' is too long (at most " << kMaxRecordLength << " bytes: the length field has 29 bits)";
  const auto* data = reinterpret_cast<const unsigned char*>(record.data());
  const size_t len = record.size();
  const size_t aligned = len & ~size_t{3};
  unsigned char head[8];
  store_le32(head, kRecordIOMagic);
  size_t begin = 0;
  uint32_t cflag = 0;
  // Every aligned occurrence of the magic word splits the record; the word itself is dropped
  // (the reader puts it back between parts), so a reader scanning for magic never sees it in a
  // payload.
  for (size_t i = 0; i < aligned; i += 4) {
    if (load_le32(data + i) != kRecordIOMagic) continue;
    store_le32(head + 4, encode_lrec(cflag == 0 ? 1 : 2, i - begin));
    put(head, 8);
    put(data + begin, i - begin);  // a multiple of 4: no padding
    begin = i + 4;
    cflag = 3;
  }
  store_le32(head + 4, encode_lrec(cflag, len - begin));
  put(head, 8);
  put(data + begin, len - begin);
  static const unsigned char zeros[4] = {0, 0, 0, 0};
  put(zeros, ceil4(len - begin) - (len - begin));
}

void RecordWriter::close() {
  if (file_ == nullptr) return;
  const bool ok = std::fflush(file_) == 0;
  const int error = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  NANOMX_CHECK(ok && closed) << "RecordIO: closing '" << path_
                             << "' failed: " << std::strerror(error);
}

RecordReader::RecordReader(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  NANOMX_CHECK(file_ != nullptr) << "RecordIO: cannot open '" << path
                                 << "' for reading: " << std::strerror(errno);
  // Records are read whole: a large buffer makes a batch of them a few system calls.
  std::setvbuf(file_, nullptr, _IOFBF, size_t{1} << 20);
  if (std::fseek(file_, 0, SEEK_END) == 0) {
    const long end = std::ftell(file_);
    size_ = end > 0 ? static_cast<uint64_t>(end) : 0;
  }
  std::fseek(file_, 0, SEEK_SET);
}

RecordReader::~RecordReader() {
  if (file_ != nullptr) std::fclose(file_);
}

void RecordReader::seek(uint64_t offset) {
  if (offset == offset_) return;  // sequential reads keep stdio's buffer
  NANOMX_CHECK(offset <= size_) << "RecordIO: seek in '" << path_ << "' to byte offset " << offset
                                << ", beyond the end of the file (" << size_ << " bytes)";
  NANOMX_CHECK(std::fseek(file_, static_cast<long>(offset), SEEK_SET) == 0)
      << "RecordIO: seek in '" << path_ << "' to byte offset " << offset << " failed";
  offset_ = offset;
}

void RecordReader::to_end() {
  std::fseek(file_, 0, SEEK_END);
  offset_ = size_;
}

void RecordReader::read_exact(void* out, size_t bytes, uint64_t at, const char* what) {
  if (bytes == 0) return;
  const size_t got = std::fread(out, 1, bytes, file_);
  if (got != bytes) {
    to_end();
    NANOMX_THROW() << "RecordIO: '" << path_ << "' is truncated: the " << what << " at byte offset "
                   << at << " needs " << bytes << " bytes, the file has " << got
                   << (std::ferror(file_) ? " (read error)" : "");
  }
  offset_ += bytes;
}

bool RecordReader::header(uint32_t& cflag, uint32_t& length, uint64_t record_start) {
  const uint64_t at = offset_;
  unsigned char head[8];
  const size_t got = std::fread(head, 1, 8, file_);
  if (got == 0 && std::feof(file_)) {
    if (at != record_start) {
      to_end();
      NANOMX_THROW() << "RecordIO: '" << path_ << "' is truncated: the record at byte offset "
                     << record_start << " has a continued part but the file ends at byte offset "
                     << at;
    }
    return false;
  }
  if (got != 8) {
    to_end();
    NANOMX_THROW() << "RecordIO: '" << path_ << "' is truncated: a chunk header at byte offset "
                   << at << " needs 8 bytes, the file has " << got;
  }
  offset_ += 8;
  const uint32_t magic = load_le32(head);
  if (magic != kRecordIOMagic) {
    to_end();
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08X", magic);
    NANOMX_THROW() << "RecordIO: '" << path_ << "' has a bad magic word " << hex
                   << " at byte offset " << at << " (expected 0xCED7230A: not a RecordIO file, "
                   << "or an offset that is not the start of a record)";
  }
  const uint32_t lrec = load_le32(head + 4);
  cflag = lrec >> 29;
  length = lrec & kLengthMask;
  if (cflag > 3) {
    to_end();
    NANOMX_THROW() << "RecordIO: '" << path_ << "' has an invalid continuation flag " << cflag
                   << " at byte offset " << at << " (expected 0 to 3)";
  }
  const uint64_t left = size_ > offset_ ? size_ - offset_ : 0;
  if (ceil4(length) > left) {
    to_end();
    NANOMX_THROW() << "RecordIO: '" << path_ << "' is truncated: the chunk at byte offset " << at
                   << " holds " << length << " bytes (padded to " << ceil4(length) << ") but only "
                   << left << " bytes are left in the file";
  }
  const bool first = at == record_start;
  if (first ? (cflag == 2 || cflag == 3) : (cflag == 0 || cflag == 1)) {
    to_end();
    NANOMX_THROW() << "RecordIO: '" << path_ << "' has a chunk with continuation flag " << cflag
                   << " at byte offset " << at
                   << (first ? " where a record starts (expected 0 or 1)"
                             : " inside a multi-part record (expected 2 or 3)");
  }
  return true;
}

bool RecordReader::read(std::string& out) {
  out.clear();
  const uint64_t start = offset_;
  uint32_t cflag = 0, length = 0;
  for (;;) {
    if (!header(cflag, length, start)) return false;
    const size_t old = out.size();
    out.resize(old + ceil4(length));
    read_exact(out.data() + old, ceil4(length), offset_, "payload");
    out.resize(old + length);
    if (cflag == 0 || cflag == 3) return true;
    static const unsigned char magic[4] = {0x0A, 0x23, 0xD7, 0xCE};
    out.append(reinterpret_cast<const char*>(magic), 4);
  }
}

bool RecordReader::skip() {
  const uint64_t start = offset_;
  uint32_t cflag = 0, length = 0;
  for (;;) {
    if (!header(cflag, length, start)) return false;
    seek(offset_ + ceil4(length));
    if (cflag == 0 || cflag == 3) return true;
  }
}

}  // namespace nanomx::io
