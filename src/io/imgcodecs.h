// OpenCV's imdecode / imencode, reached through a plugin (libnanomx_imgcodecs.so, built from
// src/io/imgcodecs/plugin.cc) that the io layer loads the first time it needs a codec
// libjpeg-turbo does not cover. libopencv_imgcodecs links ~120 libraries (GDAL, poppler, HDF5,
// ...): linked into libnanomx it cost every process ~0.14 s and ~45 MB at start; now only a
// process that decodes a PNG, BMP, rotated or CMYK JPEG, or encodes an image, pays it once.
// core and imgproc (cv::Mat, resize, cvtColor) are light and stay linked.
#pragma once

#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace nanomx::io {

// cv::imdecode(buffer, mode): an empty Mat when OpenCV cannot decode the bytes; throws
// nanomx::Error with OpenCV's message when it raises, or when the plugin cannot be loaded.
cv::Mat imdecode(const cv::Mat& buffer, int mode);
// cv::imencode(ext, image, out, params): false when OpenCV cannot encode.
bool imencode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& out,
              const std::vector<int>& params);

// The plugin's interface (extern "C", so that dlsym finds the names unmangled). Each returns
// false with OpenCV's exception message in `error` when OpenCV throws; `ok` says what the codec
// call itself returned.
namespace imgcodecs_abi {
inline constexpr const char* kLibrary = "libnanomx_imgcodecs.so";
inline constexpr const char* kDecode = "nanomx_imgcodecs_decode";
inline constexpr const char* kEncode = "nanomx_imgcodecs_encode";
using DecodeFn = bool (*)(const cv::Mat* buffer, int mode, cv::Mat* out, std::string* error);
using EncodeFn = bool (*)(const std::string* ext, const cv::Mat* image,
                          std::vector<unsigned char>* out, const std::vector<int>* params, bool* ok,
                          std::string* error);
}  // namespace imgcodecs_abi

}  // namespace nanomx::io
