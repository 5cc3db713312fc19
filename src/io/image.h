// Image decoding and MXNet's image augmenters (mx.img), on OpenCV's imgcodecs and imgproc: JPEG
// through libjpeg-turbo (at a reduced scale when a crop allows it), SIMD resizes. Images are
// cv::Mat, HWC, RGB channel order (MXNet's imdecode default), uint8 or float32.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace nanomx::io {

// The width and height in a JPEG or PNG header, without decoding; false for other formats or a
// header too damaged to read.
bool peek_image_size(std::string_view bytes, int& width, int& height);

// Decodes to 3-channel RGB (flag 1), 1-channel gray (flag 0) or unchanged (flag -1; RGB(A) order
// when to_rgb). `reduce` (1, 2, 4 or 8) decodes a JPEG at that fraction of its size. Throws naming
// `where` when the bytes are not an image OpenCV can read.
// `max_rows` > 0: only the top rows are wanted. A JPEG decoded through libjpeg then stops after
// that many rows (the result has only those, identical to the top of a full decode, and damage
// below them goes unnoticed); other images come whole.
cv::Mat decode_image(std::string_view bytes, int flag, bool to_rgb, int reduce,
                     std::string_view where, int max_rows = 0);
// Encodes (BGR order expected by OpenCV: the caller converts) as .jpg/.jpeg (quality 0-100) or
// .png (compression 0-9).
std::string encode_image(const cv::Mat& image, const std::string& ext, int quality);

// MXNet's interpolation codes: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos4,
// 9 auto (cubic up, area down, else bilinear), 10 random of 0-4 (drawn from rng).
int interp_method(int interp, int old_h, int old_w, int new_h, int new_w, std::mt19937_64* rng);
cv::Mat resize(const cv::Mat& src, int w, int h, int interp);
// Shorter edge to `size`, the longer to long*size/short (integer division).
cv::Mat resize_short(const cv::Mat& src, int size, int interp, std::mt19937_64* rng);
// MXNet's scale_down: the largest (w, h) of the aspect ratio of `size` that fits `src`.
void scale_down(int src_w, int src_h, int& w, int& h);

// A rectangle of the source and the output size, chosen before decoding so that the decode can
// run at a reduced scale.
struct CropPlan {
  int x0 = 0, y0 = 0, w = 0, h = 0;  // in the pixels of the base image
  int base_w = 0, base_h = 0;        // the image the crop is taken from (after `resize`, if any)
};

// The augmentation of ImageIter's CreateAugmenter (and ImageRecordIter's keywords), applied in
// MXNet's order. All randomness comes from the per-image generator, so a pipeline's output does
// not depend on its thread count.
struct AugmentConfig {
  int out_w = 224, out_h = 224, channels = 3;
  int resize = 0;  // shorter edge first (0: off)
  enum class Crop { kCenter, kRandom, kRandomSized, kRecordIter } crop = Crop::kCenter;
  float min_area = 0.08f, max_area = 1.0f;
  float min_ratio = 3.0f / 4.0f, max_ratio = 4.0f / 3.0f;
  bool record_rand_crop = false;  // ImageRecordIter's rand_crop (Crop::kRecordIter)
  bool rand_mirror = false;
  float brightness = 0, contrast = 0, saturation = 0, hue = 0, pca_noise = 0, rand_gray = 0;
  int inter_method = 2;
  bool normalize = false;
  float mean[3] = {0, 0, 0};
  float std[3] = {1, 1, 1};
  float scale = 1;             // ImageRecordIter's `scale`, applied after mean/std
  bool reduced_decode = true;  // decode JPEGs at 1/2, 1/4, 1/8 when the crop allows it
  bool partial_decode = true;  // stop decoding a JPEG below the crop's last row
  bool uint8_out = false;      // ImageRecordIter dtype='uint8': no normalisation
};

// Per-stage timings are taken by the caller; these are the stages.
// 1. Plans the crop from the source size (random draws happen here), 2. decodes, 3. crops and
// resizes to the output size, 4. flips and jitters colour (float), 5. normalises into `out`
// (CHW, float32 or uint8).
class Augmenter {
 public:
  explicit Augmenter(const AugmentConfig& config) : c_(config) {}
  const AugmentConfig& config() const { return c_; }
  // The decode scale (1, 2, 4, 8) for a source of src_w x src_h, given the crop plan.
  int plan(int src_w, int src_h, std::mt19937_64& rng, CropPlan& crop) const;
  // The rows of an image decoded at 1/reduce that crop_resize reads: the crop's last row, or 0
  // (all) when the whole image is resized first or partial_decode is off.
  int rows_needed(const CropPlan& crop, int reduce) const;
  cv::Mat crop_resize(const cv::Mat& decoded, const CropPlan& crop, int reduce,
                      std::mt19937_64& rng) const;
  // Flips; the colour jitters (when any is on) turn `image` into float32 RGB. `bgr`: the image
  // is still in OpenCV's order (the pipeline decodes without a conversion pass and swaps the
  // channels while normalising); cleared when this converts.
  void flip_color(cv::Mat& image, bool& bgr, std::mt19937_64& rng) const;
  void normalize_into(const cv::Mat& image, bool bgr, void* out) const;

 private:
  bool resizes_to_base() const;
  AugmentConfig c_;
};

// Uniform in [a, b) from rng (double), and an integer in [a, b] (inclusive).
double uniform(std::mt19937_64& rng, double a, double b);
int randint(std::mt19937_64& rng, int a, int b);

}  // namespace nanomx::io
