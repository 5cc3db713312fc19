#include "convert.h"

#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "trace_file.h"

namespace nanomx::trace {
namespace {

constexpr size_t kChunk = 1 << 20;

bool ends_with(const std::string& text, const char* suffix) {
  size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

class ProgressBar {
 public:
  ProgressBar(bool enabled, uint64_t total) : enabled_(enabled), total_(total) {}
  void update(uint64_t done) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100) && done < total_) return;
    last_ = now;
    int percent = total_ ? static_cast<int>(done * 100 / total_) : 100;
    int filled = percent / 4;
    std::fprintf(stderr, "\rconvert [%-25.*s] %3d%%  %.1f / %.1f MB", filled,
                 "#########################", percent, static_cast<double>(done) / 1e6,
                 static_cast<double>(total_) / 1e6);
    std::fflush(stderr);
  }
  void finish() {
    if (!enabled_) return;
    update(total_);
    std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
  uint64_t total_;
  std::chrono::steady_clock::time_point last_{};
};

struct Files {
  FILE* in = nullptr;
  FILE* out = nullptr;
  std::string temp;
  bool committed = false;
  ~Files() {
    if (in) std::fclose(in);
    if (out) std::fclose(out);
    if (!committed && !temp.empty()) std::remove(temp.c_str());
  }
};

void write_all(FILE* file, const unsigned char* data, size_t size, const std::string& path) {
  if (size && std::fwrite(data, 1, size, file) != size) {
    throw TraceError(path + ": write error: " + std::strerror(errno));
  }
}

}  // namespace

ConvertResult convert_file(const std::string& input, const std::string& output, bool progress,
                           int level) {
  if (input == output) throw TraceError("convert: input and output are the same file: " + input);
  bool input_gzip = is_gzip_file(input);
  bool compress = ends_with(output, ".gz");
  Files files;
  files.in = std::fopen(input.c_str(), "rb");
  if (!files.in) throw TraceError(input + ": cannot open: " + std::strerror(errno));
  if (compress && input_gzip) {
    throw TraceError("convert: " + input + " is already gzip-compressed and " + output +
                     " ends in .gz; give an output name without .gz to decompress");
  }
  if (!compress && !input_gzip) {
    throw TraceError("convert: " + input + " is not gzip-compressed and " + output +
                     " does not end in .gz: nothing to convert (name the output *.json.gz to "
                     "compress)");
  }
  std::fseek(files.in, 0, SEEK_END);
  uint64_t total = static_cast<uint64_t>(std::ftell(files.in));
  std::fseek(files.in, 0, SEEK_SET);
  files.temp = output + ".tmp";
  files.out = std::fopen(files.temp.c_str(), "wb");
  if (!files.out) throw TraceError(output + ": cannot create: " + std::strerror(errno));

  ConvertResult result;
  result.compressed = compress;
  ProgressBar bar(progress, total);
  std::vector<unsigned char> in_buffer(kChunk), out_buffer(kChunk);
  z_stream stream{};
  // windowBits 15 + 16: gzip wrapper; 15 + 32: inflate detects gzip or zlib.
  int init = compress ? deflateInit2(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY)
                      : inflateInit2(&stream, 15 + 32);
  if (init != Z_OK) throw TraceError("convert: zlib initialisation failed");
  struct StreamEnd {
    z_stream* stream;
    bool deflate;
    ~StreamEnd() { deflate ? deflateEnd(stream) : inflateEnd(stream); }
  } stream_end{&stream, compress};

  bool input_done = false;
  bool stream_ended = false;
  while (!input_done) {
    size_t got = std::fread(in_buffer.data(), 1, kChunk, files.in);
    if (std::ferror(files.in)) throw TraceError(input + ": read error: " + std::strerror(errno));
    input_done = got < kChunk;
    result.bytes_in += got;
    stream.next_in = in_buffer.data();
    stream.avail_in = static_cast<uInt>(got);
    do {
      stream.next_out = out_buffer.data();
      stream.avail_out = static_cast<uInt>(kChunk);
      int code;
      if (compress) {
        code = deflate(&stream, input_done ? Z_FINISH : Z_NO_FLUSH);
        if (code == Z_STREAM_ERROR) throw TraceError("convert: zlib deflate failed");
      } else {
        if (stream_ended && stream.avail_in > 0) {
          // Concatenated gzip members (as `cat a.gz b.gz` makes) decode one after another.
          inflateReset(&stream);
          stream_ended = false;
        }
        code = inflate(&stream, Z_NO_FLUSH);
        if (code == Z_STREAM_END) stream_ended = true;
        if (code == Z_DATA_ERROR || code == Z_NEED_DICT || code == Z_MEM_ERROR) {
          throw TraceError(input + ": corrupt gzip data near compressed byte " +
                           std::to_string(result.bytes_in - stream.avail_in) + ": " +
                           (stream.msg ? stream.msg : "inflate failed"));
        }
      }
      size_t produced = kChunk - stream.avail_out;
      write_all(files.out, out_buffer.data(), produced, output);
      result.bytes_out += produced;
      if (!compress && code == Z_BUF_ERROR && stream.avail_in == 0) break;
    } while (stream.avail_out == 0 || (!compress && stream.avail_in > 0));
    bar.update(result.bytes_in);
  }
  if (!compress && !stream_ended) {
    throw TraceError(input + ": the gzip stream is cut short (after " +
                     std::to_string(result.bytes_in) +
                     " compressed bytes); the output would be "
                     "incomplete");
  }
  bar.finish();
  if (std::fclose(files.out) != 0) {
    files.out = nullptr;
    throw TraceError(output + ": write error: " + std::strerror(errno));
  }
  files.out = nullptr;
  if (std::rename(files.temp.c_str(), output.c_str()) != 0) {
    throw TraceError(output +
                     ": cannot rename the finished file into place: " + std::strerror(errno));
  }
  files.committed = true;
  return result;
}

}  // namespace nanomx::trace
