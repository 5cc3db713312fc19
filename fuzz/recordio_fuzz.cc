// Fuzz target: the RecordIO reader (chunk headers, continuation flags, lengths past the end),
// image record headers (IRHeader + labels), JPEG/PNG header peeking and the .lst parser, on one
// input used as each. Every rejection must be a nanomx::Error with a message; anything else
// (a crash, a hang, a huge allocation) is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "io/image.h"
#include "io/image_record.h"
#include "io/recordio.h"
#include "nanomx/error.h"

namespace {

void check(const nanomx::Error& error) {
  if (std::string_view(error.what()).empty()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static const std::string path = "/tmp/nanomx_recordio_fuzz_" + std::to_string(::getpid());
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
      nanomx::io::RecordReader reader(path);
      std::string record;
      for (int i = 0; i < 1000 && reader.read(record); ++i) {
        try {
          const nanomx::io::ImageRecord r = nanomx::io::unpack_image_record(record, "fuzz");
          int w = 0, h = 0;
          nanomx::io::peek_image_size(r.image, w, h);
        } catch (const nanomx::Error& error) {
          check(error);
        }
      }
    } catch (const nanomx::Error& error) {
      check(error);
    }
  }
  try {
    nanomx::io::parse_list(bytes, "fuzz");
  } catch (const nanomx::Error& error) {
    check(error);
  }
  int w = 0, h = 0;
  nanomx::io::peek_image_size(bytes, w, h);
  return 0;
}
