#include "io/imgcodecs.h"

#include <dlfcn.h>

#include "base/plugin.h"
#include "nanomx/error.h"

namespace nanomx::io {
namespace {

struct Codecs {
  imgcodecs_abi::DecodeFn decode;
  imgcodecs_abi::EncodeFn encode;
};

const Codecs& codecs() {
  static const Codecs loaded = [] {
    const std::string what = "image codecs (OpenCV imgcodecs)";
    void* library =
        plugin::load(imgcodecs_abi::kLibrary, "NANOMX_IMGCODECS_LIBRARY", RTLD_NOW | RTLD_LOCAL,
                     what, "it is built with libnanomx.so and installed beside it");
    return Codecs{reinterpret_cast<imgcodecs_abi::DecodeFn>(
                      plugin::entry_point(library, imgcodecs_abi::kDecode, what)),
                  reinterpret_cast<imgcodecs_abi::EncodeFn>(
                      plugin::entry_point(library, imgcodecs_abi::kEncode, what))};
  }();
  return loaded;
}

}  // namespace

cv::Mat imdecode(const cv::Mat& buffer, int mode) {
  cv::Mat out;
  std::string error;
  NANOMX_CHECK(codecs().decode(&buffer, mode, &out, &error)) << "OpenCV failed: " << error;
  return out;
}

bool imencode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& out,
              const std::vector<int>& params) {
  bool ok = false;
  std::string error;
  NANOMX_CHECK(codecs().encode(&ext, &image, &out, &params, &ok, &error))
      << "OpenCV failed: " << error;
  return ok;
}

}  // namespace nanomx::io
