// libnanomx_imgcodecs.so: OpenCV's imgcodecs behind two C entry points, loaded by the io layer
// on first use (src/io/imgcodecs.h says why). Exceptions never cross the dlopen boundary.
#include <opencv2/imgcodecs.hpp>

#include "io/imgcodecs.h"

namespace abi = nanomx::io::imgcodecs_abi;

extern "C" __attribute__((visibility("default"))) bool nanomx_imgcodecs_decode(
    const cv::Mat* buffer, int mode, cv::Mat* out, std::string* error) {
  try {
    *out = cv::imdecode(*buffer, mode);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

extern "C" __attribute__((visibility("default"))) bool nanomx_imgcodecs_encode(
    const std::string* ext, const cv::Mat* image, std::vector<unsigned char>* out,
    const std::vector<int>* params, bool* ok, std::string* error) {
  try {
    *ok = cv::imencode(*ext, *image, *out, *params);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

// The entry points match the types the loader casts them to.
static_assert(std::is_same_v<decltype(&nanomx_imgcodecs_decode), abi::DecodeFn>);
static_assert(std::is_same_v<decltype(&nanomx_imgcodecs_encode), abi::EncodeFn>);
