// MXNet's RecordIO container (dmlc-core's format, docs/io.md "RecordIO"): 4-byte-aligned chunks
// of `magic, (cflag << 29) | length, payload, zero padding`; a record holding the magic word at an
// aligned offset is split there into parts (cflag 1 first, 2 middle, 3 last) and joined back with
// the magic word by the reader. Files made by MXNet read here and the other way round.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace nanomx::io {

constexpr uint32_t kRecordIOMagic = 0xCED7230A;
// A record (and each of its parts) must be shorter than 2^29 bytes: the length has 29 bits.
constexpr uint64_t kMaxRecordLength = (uint64_t{1} << 29) - 1;

// Writes records; tell() is the byte offset where the next record starts (what .idx files hold).
class RecordWriter {
 public:
  // Opens (truncates) `path`; throws naming the file when it cannot.
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void write(std::string_view record);
  uint64_t tell() const { return offset_; }
  // Flushes and closes; throws when the data did not reach the file. Idempotent.
  void close();
  const std::string& path() const { return path_; }

 private:
  void put(const void* data, size_t bytes);
  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t offset_ = 0;
};

// Reads records in order. Errors name the file and the byte offset of the bad chunk; a length
// is checked against the bytes left in the file before anything is allocated.
class RecordReader {
 public:
  explicit RecordReader(const std::string& path);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // The next record into `out`; false at the end of the file (only at a chunk boundary).
  bool read(std::string& out);
  // Moves to `offset`, which must be where a record starts (checked at the next read).
  void seek(uint64_t offset);
  uint64_t tell() const { return offset_; }
  uint64_t file_size() const { return size_; }
  const std::string& path() const { return path_; }
  // Steps over the next record without reading its payload; false at the end of the file.
  bool skip();

 private:
  // Reads one chunk header at offset_; false at a clean end of file.
  bool header(uint32_t& cflag, uint32_t& length, uint64_t record_start);
  void read_exact(void* out, size_t bytes, uint64_t at, const char* what);
  // After an error: later reads see the end of the file instead of the same bad bytes.
  void to_end();
  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

}  // namespace nanomx::io
