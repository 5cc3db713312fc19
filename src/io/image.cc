#include "io/image.h"

#include <jpeglib.h>
#include <setjmp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "io/imgcodecs.h"
#include "nanomx/error.h"

namespace nanomx::io {

double uniform(std::mt19937_64& rng, double a, double b) {
  return a + (b - a) * std::generate_canonical<double, 53>(rng);
}

int randint(std::mt19937_64& rng, int a, int b) {
  return std::uniform_int_distribution<int>(a, b)(rng);
}

bool peek_image_size(std::string_view bytes, int& width, int& height) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  if (n >= 24 && std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) {
    width = static_cast<int>(p[16] << 24 | p[17] << 16 | p[18] << 8 | p[19]);
    height = static_cast<int>(p[20] << 24 | p[21] << 16 | p[22] << 8 | p[23]);
    return width > 0 && height > 0;
  }
  if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return false;
  size_t i = 2;
  while (i + 4 <= n) {
    if (p[i] != 0xFF) return false;
    const unsigned char marker = p[i + 1];
    if (marker == 0xFF) {
      ++i;  // fill byte
      continue;
    }
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
      i += 2;
      continue;
    }
    const size_t len = size_t{p[i + 2]} << 8 | p[i + 3];
    if (len < 2) return false;
    const bool sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) {
      if (i + 9 > n) return false;
      height = p[i + 5] << 8 | p[i + 6];
      width = p[i + 7] << 8 | p[i + 8];
      return width > 0 && height > 0;
    }
    if (marker == 0xD9 || marker == 0xDA) return false;  // end or scan before a frame header
    i += 2 + len;
  }
  return false;
}

namespace {

// JPEGs are decoded with libjpeg-turbo directly, the library OpenCV's imdecode uses, without the
// work imdecode adds around it (asking every registered codec, GDAL's included, whether it
// knows the bytes; an extra copy): about half the CPU time per image here (docs/io.md). Files
// with an Exif orientation other than 1 (imdecode rotates them), CMYK files and anything
// libjpeg refuses go through imdecode, so the pixels are imdecode's in every case.
struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
};

void jpeg_error_exit(j_common_ptr cinfo) {
  longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 1);
}
void jpeg_quiet(j_common_ptr, int) {}

// The Exif orientation of a JPEG: 1 (as stored) when it has no Exif block or no orientation tag,
// the tag's value otherwise, 0 when the block cannot be read (then imdecode decides).
int exif_orientation(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 2;
  while (i + 4 <= n && p[i] == 0xFF) {
    const unsigned char marker = p[i + 1];
    if (marker == 0xDA || marker == 0xD9) return 1;
    const size_t len = size_t{p[i + 2]} << 8 | p[i + 3];
    if (marker == 0xE1 && len >= 8 && i + 10 <= n && std::memcmp(p + i + 4, "Exif\0\0", 6) == 0) {
      const unsigned char* tiff = p + i + 10;
      const size_t size = std::min(len - 8, n - (i + 10));
      if (size < 8 || (tiff[0] != 'I' && tiff[0] != 'M')) return 0;
      const bool le = tiff[0] == 'I';
      const auto u16 = [&](size_t at) {
        return le ? tiff[at] | tiff[at + 1] << 8 : tiff[at] << 8 | tiff[at + 1];
      };
      const auto u32 = [&](size_t at) {
        return le ? uint32_t{tiff[at]} | uint32_t{tiff[at + 1]} << 8 |
                        uint32_t{tiff[at + 2]} << 16 | uint32_t{tiff[at + 3]} << 24
                  : uint32_t{tiff[at]} << 24 | uint32_t{tiff[at + 1]} << 16 |
                        uint32_t{tiff[at + 2]} << 8 | uint32_t{tiff[at + 3]};
      };
      const size_t ifd = u32(4);
      if (ifd + 2 > size) return 0;
      const size_t count = static_cast<size_t>(u16(ifd));
      for (size_t k = 0; k < count; ++k) {
        const size_t entry = ifd + 2 + 12 * k;
        if (entry + 12 > size) return 0;
        if (u16(entry) == 0x0112) return u16(entry + 8);
      }
      return 1;
    }
    i += 2 + len;
  }
  return 1;
}

// Decodes into *out (3-channel in the asked order, or gray) at 1/reduce; false when libjpeg
// refuses the data or the file is not a plain gray/YCbCr/RGB JPEG. No object with a destructor
// lives in this frame across the longjmp.
bool decode_jpeg(const unsigned char* data, size_t size, bool gray, bool rgb, int reduce,
                 int max_rows, cv::Mat* out) {
  jpeg_decompress_struct cinfo;
  JpegError error;
  cinfo.err = jpeg_std_error(&error.mgr);
  error.mgr.error_exit = jpeg_error_exit;
  error.mgr.emit_message = jpeg_quiet;
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.num_components != 1 && cinfo.num_components != 3) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : rgb ? JCS_EXT_RGB : JCS_EXT_BGR;
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(reduce);
  jpeg_start_decompress(&cinfo);
  const JDIMENSION rows = max_rows > 0
                              ? std::min(static_cast<JDIMENSION>(max_rows), cinfo.output_height)
                              : cinfo.output_height;
  out->create(static_cast<int>(rows), static_cast<int>(cinfo.output_width),
              gray ? CV_8UC1 : CV_8UC3);
  while (cinfo.output_scanline < rows) {
    JSAMPROW row = out->ptr(static_cast<int>(cinfo.output_scanline));
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  // Rows are final once read (the upsampler's context is the rows above and the next row
  // group, which libjpeg reads before handing a row out), so stopping early leaves them exact.
  if (rows == cinfo.output_height) jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);  // also abandons a decode stopped early
  return true;
}

}  // namespace

cv::Mat decode_image(std::string_view bytes, int flag, bool to_rgb, int reduce,
                     std::string_view where, int max_rows) {
  NANOMX_CHECK(flag == 0 || flag == 1 || flag == -1)
      << "imdecode: flag " << flag << " is not 0 (gray), 1 (colour) or -1 (unchanged)";
  int mode = flag == 0 ? cv::IMREAD_GRAYSCALE : flag == 1 ? cv::IMREAD_COLOR : cv::IMREAD_UNCHANGED;
  if (flag == 1 && reduce > 1) {
    mode = reduce == 2   ? cv::IMREAD_REDUCED_COLOR_2
           : reduce == 4 ? cv::IMREAD_REDUCED_COLOR_4
                         : cv::IMREAD_REDUCED_COLOR_8;
  } else if (flag == 0 && reduce > 1) {
    mode = reduce == 2   ? cv::IMREAD_REDUCED_GRAYSCALE_2
           : reduce == 4 ? cv::IMREAD_REDUCED_GRAYSCALE_4
                         : cv::IMREAD_REDUCED_GRAYSCALE_8;
  }
  cv::Mat image;
  const bool jpeg = bytes.size() > 2 && static_cast<unsigned char>(bytes[0]) == 0xFF &&
                    static_cast<unsigned char>(bytes[1]) == 0xD8;
  if (jpeg && flag != -1 && exif_orientation(bytes) == 1 &&
      decode_jpeg(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), flag == 0,
                  to_rgb, std::max(reduce, 1), max_rows, &image)) {
    return image;
  }
  image.release();
  if (!bytes.empty()) {
    const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8U, const_cast<char*>(bytes.data()));
    try {
      image = imdecode(buf, mode);
    } catch (const Error& e) {
      NANOMX_THROW() << "imdecode " << where << ": " << e.what();
    }
  }
  NANOMX_CHECK(!image.empty()) << "imdecode " << where << ": " << bytes.size()
                               << " bytes are not an image OpenCV can decode (JPEG, PNG, BMP, ...)";
  if (image.depth() != CV_8U) {
    cv::Mat eight;
    image.convertTo(eight, CV_8U, image.depth() == CV_16U ? 1.0 / 257 : 1.0);
    image = eight;
  }
  if (to_rgb) {
    if (image.channels() == 3) {
      cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
    } else if (image.channels() == 4) {
      cv::cvtColor(image, image, cv::COLOR_BGRA2RGBA);
    }
  }
  return image;
}

std::string encode_image(const cv::Mat& image, const std::string& ext, int quality) {
  std::vector<int> params;
  std::string lower = ext;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower == ".jpg" || lower == ".jpeg") {
    params = {cv::IMWRITE_JPEG_QUALITY, quality};
  } else if (lower == ".png") {
    params = {cv::IMWRITE_PNG_COMPRESSION, quality};
  } else {
    NANOMX_THROW() << "imencode: encoding '" << ext << "' is not one of .jpg, .jpeg, .png";
  }
  std::vector<unsigned char> out;
  NANOMX_CHECK(imencode(lower, image, out, params))
      << "imencode: OpenCV could not encode a " << image.cols << "x" << image.rows << " image as "
      << ext;
  return std::string(out.begin(), out.end());
}

int interp_method(int interp, int old_h, int old_w, int new_h, int new_w, std::mt19937_64* rng) {
  if (interp == 9) {
    if (new_h > old_h && new_w > old_w) return 2;
    if (new_h < old_h && new_w < old_w) return 3;
    return 1;
  }
  if (interp == 10) {
    NANOMX_CHECK(rng != nullptr) << "interpolation 10 (random) needs a random generator";
    return randint(*rng, 0, 4);
  }
  NANOMX_CHECK(interp >= 0 && interp <= 4)
      << "unknown interpolation method " << interp
      << " (expected 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos4, 9 auto, 10 random)";
  return interp;
}

cv::Mat resize(const cv::Mat& src, int w, int h, int interp) {
  NANOMX_CHECK(w > 0 && h > 0) << "imresize: output size " << w << "x" << h << " must be positive";
  NANOMX_CHECK(interp >= 0 && interp <= 4)
      << "imresize: interpolation " << interp << " is not 0 to 4 (OpenCV's INTER_* codes)";
  cv::Mat out;
  cv::resize(src, out, cv::Size(w, h), 0, 0, interp);
  return out;
}

cv::Mat resize_short(const cv::Mat& src, int size, int interp, std::mt19937_64* rng) {
  const int h = src.rows, w = src.cols;
  int new_h, new_w;
  if (h > w) {
    new_h = static_cast<int>(int64_t{size} * h / w);
    new_w = size;
  } else {
    new_h = size;
    new_w = static_cast<int>(int64_t{size} * w / h);
  }
  return resize(src, new_w, new_h, interp_method(interp, h, w, new_h, new_w, rng));
}

void scale_down(int src_w, int src_h, int& w, int& h) {
  double fw = w, fh = h;
  if (src_h < fh) {
    fw = fw * src_h / fh;
    fh = src_h;
  }
  if (src_w < fw) {
    fh = fh * src_w / fw;
    fw = src_w;
  }
  w = static_cast<int>(fw);
  h = static_cast<int>(fh);
}

namespace {

// The largest of 8, 4, 2 that keeps a w x h region at least out_w x out_h; 1 when none does.
int reduce_for(int w, int h, int out_w, int out_h) {
  for (int r : {8, 4, 2}) {
    if (w / r >= out_w && h / r >= out_h) return r;
  }
  return 1;
}

}  // namespace

int Augmenter::plan(int src_w, int src_h, std::mt19937_64& rng, CropPlan& crop) const {
  int w = src_w, h = src_h;
  int reduce = 1;
  if (c_.resize > 0) {
    const int short_side = std::min(w, h);
    if (h > w) {
      h = static_cast<int>(int64_t{c_.resize} * h / w);
      w = c_.resize;
    } else {
      w = static_cast<int>(int64_t{c_.resize} * w / h);
      h = c_.resize;
    }
    if (c_.reduced_decode) {
      for (int r : {8, 4, 2}) {
        if (short_side / r >= c_.resize) {
          reduce = r;
          break;
        }
      }
    }
  }
  // Crops are in the (resized) image's coordinates.
  crop.base_w = w;
  crop.base_h = h;
  switch (c_.crop) {
    case AugmentConfig::Crop::kRandomSized: {
      const double area = static_cast<double>(w) * h;
      for (int attempt = 0; attempt < 10; ++attempt) {
        const double target = uniform(rng, c_.min_area, c_.max_area) * area;
        const double ratio = std::exp(uniform(rng, std::log(c_.min_ratio), std::log(c_.max_ratio)));
        const int cw = static_cast<int>(std::lround(std::sqrt(target * ratio)));
        const int ch = static_cast<int>(std::lround(std::sqrt(target / ratio)));
        if (cw <= w && ch <= h && cw > 0 && ch > 0) {
          crop.x0 = randint(rng, 0, w - cw);
          crop.y0 = randint(rng, 0, h - ch);
          crop.w = cw;
          crop.h = ch;
          if (c_.resize <= 0 && c_.reduced_decode) reduce = reduce_for(cw, ch, c_.out_w, c_.out_h);
          return reduce;
        }
      }
      [[fallthrough]];  // ten misses: a centre crop, as MXNet
    }
    case AugmentConfig::Crop::kCenter:
    case AugmentConfig::Crop::kRandom: {
      int cw = c_.out_w, ch = c_.out_h;
      scale_down(w, h, cw, ch);
      const bool random = c_.crop == AugmentConfig::Crop::kRandom;
      crop.x0 = random ? randint(rng, 0, w - cw) : (w - cw) / 2;
      crop.y0 = random ? randint(rng, 0, h - ch) : (h - ch) / 2;
      crop.w = cw;
      crop.h = ch;
      break;
    }
    case AugmentConfig::Crop::kRecordIter: {
      // Upscaled to cover the output first when smaller (crop_resize does it), then a 1:1 crop.
      const double s =
          std::max({1.0, static_cast<double>(c_.out_w) / w, static_cast<double>(c_.out_h) / h});
      const int sw = std::max(c_.out_w, static_cast<int>(w * s));
      const int sh = std::max(c_.out_h, static_cast<int>(h * s));
      const bool random = c_.record_rand_crop;
      crop.base_w = sw;
      crop.base_h = sh;
      crop.x0 = random ? randint(rng, 0, sw - c_.out_w) : (sw - c_.out_w) / 2;
      crop.y0 = random ? randint(rng, 0, sh - c_.out_h) : (sh - c_.out_h) / 2;
      crop.w = c_.out_w;
      crop.h = c_.out_h;
      return reduce;
    }
  }
  if (c_.resize <= 0 && c_.reduced_decode) reduce = reduce_for(crop.w, crop.h, c_.out_w, c_.out_h);
  return reduce;
}

namespace {
// The crop in the coordinates of an image decoded at 1/reduce (before clamping to it).
cv::Rect scaled_crop(const CropPlan& crop, int reduce) {
  if (reduce <= 1) return {crop.x0, crop.y0, crop.w, crop.h};
  return {crop.x0 / reduce, crop.y0 / reduce,
          std::max(1, static_cast<int>(std::lround(static_cast<double>(crop.w) / reduce))),
          std::max(1, static_cast<int>(std::lround(static_cast<double>(crop.h) / reduce)))};
}
}  // namespace

bool Augmenter::resizes_to_base() const {
  // `resize` and ImageRecordIter's upscaling bring the decoded image to the base size the crop
  // was planned on (computed from the full-size image, whatever scale it was decoded at).
  return c_.resize > 0 || c_.crop == AugmentConfig::Crop::kRecordIter;
}

int Augmenter::rows_needed(const CropPlan& crop, int reduce) const {
  if (!c_.partial_decode || resizes_to_base()) return 0;
  const cv::Rect r = scaled_crop(crop, reduce);
  return std::max(1, r.y + r.height);
}

cv::Mat Augmenter::crop_resize(const cv::Mat& decoded, const CropPlan& crop, int reduce,
                               std::mt19937_64& rng) const {
  cv::Mat src = decoded;
  const bool to_base = resizes_to_base();
  if (to_base && (src.cols != crop.base_w || src.rows != crop.base_h)) {
    src =
        resize(src, crop.base_w, crop.base_h,
               interp_method(c_.inter_method, src.rows, src.cols, crop.base_h, crop.base_w, &rng));
  }
  if (to_base) reduce = 1;
  // Crop coordinates scaled to the decoded size (reduce > 1: a JPEG decoded at 1/reduce).
  const cv::Rect scaled = scaled_crop(crop, reduce);
  int x0 = scaled.x, y0 = scaled.y, w = scaled.width, h = scaled.height;
  x0 = std::clamp(x0, 0, src.cols - 1);
  y0 = std::clamp(y0, 0, src.rows - 1);
  w = std::min(w, src.cols - x0);
  h = std::min(h, src.rows - y0);
  cv::Mat out = src(cv::Rect(x0, y0, w, h));
  if (w != c_.out_w || h != c_.out_h) {
    out = resize(out, c_.out_w, c_.out_h,
                 interp_method(c_.inter_method, h, w, c_.out_h, c_.out_w, &rng));
  }
  return out;
}

void Augmenter::flip_color(cv::Mat& image, bool& bgr, std::mt19937_64& rng) const {
  if (c_.rand_mirror && uniform(rng, 0, 1) < 0.5) cv::flip(image, image, 1);
  const bool jitter = c_.brightness > 0 || c_.contrast > 0 || c_.saturation > 0 || c_.hue > 0 ||
                      c_.pca_noise > 0 || c_.rand_gray > 0;
  if (!jitter || image.channels() != 3) return;
  cv::Mat f;
  if (bgr) {
    cv::cvtColor(image, f, cv::COLOR_BGR2RGB);
    bgr = false;
    f.convertTo(f, CV_32FC3);
  } else {
    image.convertTo(f, CV_32FC3);
  }
  const size_t n = static_cast<size_t>(f.rows) * f.cols;
  auto* px = reinterpret_cast<float*>(f.data);  // convertTo output is continuous
  constexpr float kCoef[3] = {0.299f, 0.587f, 0.114f};
  // MXNet's ColorJitterAug: brightness, contrast and saturation in a random order.
  int order[3] = {0, 1, 2};
  int count = 0;
  int active[3];
  if (c_.brightness > 0) active[count++] = 0;
  if (c_.contrast > 0) active[count++] = 1;
  if (c_.saturation > 0) active[count++] = 2;
  std::copy(active, active + count, order);
  std::shuffle(order, order + count, rng);
  for (int k = 0; k < count; ++k) {
    if (order[k] == 0) {
      const float alpha = 1.0f + static_cast<float>(uniform(rng, -c_.brightness, c_.brightness));
      for (size_t i = 0; i < 3 * n; ++i) px[i] *= alpha;
    } else if (order[k] == 1) {
      const float alpha = 1.0f + static_cast<float>(uniform(rng, -c_.contrast, c_.contrast));
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        sum += px[3 * i] * kCoef[0] + px[3 * i + 1] * kCoef[1] + px[3 * i + 2] * kCoef[2];
      }
      const float gray = static_cast<float>(3.0 * (1.0 - alpha) / (3.0 * n) * sum);
      for (size_t i = 0; i < 3 * n; ++i) px[i] = px[i] * alpha + gray;
    } else {
      const float alpha = 1.0f + static_cast<float>(uniform(rng, -c_.saturation, c_.saturation));
      for (size_t i = 0; i < n; ++i) {
        float* p = px + 3 * i;
        const float gray = (p[0] * kCoef[0] + p[1] * kCoef[1] + p[2] * kCoef[2]) * (1 - alpha);
        for (int c = 0; c < 3; ++c) p[c] = p[c] * alpha + gray;
      }
    }
  }
  if (c_.hue > 0) {
    const double alpha = uniform(rng, -c_.hue, c_.hue);
    const double u = std::cos(alpha * M_PI), w = std::sin(alpha * M_PI);
    const double bt[3][3] = {{1, 0, 0}, {0, u, -w}, {0, w, u}};
    const double tyiq[3][3] = {
        {0.299, 0.587, 0.114}, {0.596, -0.274, -0.321}, {0.211, -0.523, 0.311}};
    const double ityiq[3][3] = {{1.0, 0.956, 0.621}, {1.0, -0.272, -0.647}, {1.0, -1.107, 1.705}};
    double a[3][3] = {}, t[3][3] = {};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k) a[i][j] += ityiq[i][k] * bt[k][j];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k) t[i][j] += a[i][k] * tyiq[k][j];
    // src = dot(src, t.T): out_j = sum_k src_k * t[j][k]
    for (size_t i = 0; i < n; ++i) {
      float* p = px + 3 * i;
      const double s0 = p[0], s1 = p[1], s2 = p[2];
      for (int j = 0; j < 3; ++j)
        p[j] = static_cast<float>(s0 * t[j][0] + s1 * t[j][1] + s2 * t[j][2]);
    }
  }
  if (c_.pca_noise > 0) {
    constexpr double kEigval[3] = {55.46, 4.794, 1.148};
    constexpr double kEigvec[3][3] = {
        {-0.5675, 0.7192, 0.4009}, {-0.5808, -0.0045, -0.8140}, {-0.5836, -0.6948, 0.4203}};
    std::normal_distribution<double> normal(0.0, c_.pca_noise);
    double alpha[3];
    for (double& v : alpha) v = normal(rng);
    float rgb[3];
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int j = 0; j < 3; ++j) s += kEigvec[i][j] * alpha[j] * kEigval[j];
      rgb[i] = static_cast<float>(s);
    }
    for (size_t i = 0; i < n; ++i)
      for (int c = 0; c < 3; ++c) px[3 * i + c] += rgb[c];
  }
  if (c_.rand_gray > 0 && uniform(rng, 0, 1) < c_.rand_gray) {
    for (size_t i = 0; i < n; ++i) {
      float* p = px + 3 * i;
      const float g = p[0] * 0.21f + p[1] * 0.72f + p[2] * 0.07f;
      p[0] = p[1] = p[2] = g;
    }
  }
  image = f;
}

void Augmenter::normalize_into(const cv::Mat& image, bool bgr, void* out) const {
  const int h = image.rows, w = image.cols, ch = image.channels();
  NANOMX_CHECK(h == c_.out_h && w == c_.out_w && ch == c_.channels)
      << "image pipeline: an augmented image is " << h << "x" << w << "x" << ch << ", expected "
      << c_.out_h << "x" << c_.out_w << "x" << c_.channels;
  const size_t plane = static_cast<size_t>(h) * w;
  // Output channel c reads input channel src[c]: RGB(A) out of BGR(A) without a separate pass.
  int src[4] = {0, 1, 2, 3};
  if (bgr && ch >= 3) std::swap(src[0], src[2]);
  if (c_.uint8_out) {
    auto* dst = static_cast<uint8_t*>(out);
    cv::Mat u8 = image;
    if (image.depth() != CV_8U) image.convertTo(u8, CV_8U);
    for (int y = 0; y < h; ++y) {
      const uint8_t* row = u8.ptr<uint8_t>(y);
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < ch; ++c) dst[c * plane + y * w + x] = row[x * ch + src[c]];
    }
    return;
  }
  auto* dst = static_cast<float*>(out);
  float mul[4], sub[4];
  for (int c = 0; c < ch; ++c) {
    sub[c] = c_.normalize ? c_.mean[c] : 0.0f;
    mul[c] = c_.normalize ? c_.scale / c_.std[c] : c_.scale;
  }
  if (image.depth() == CV_8U) {
    // Channel planes first (cv::split's SIMD de-interleave), then one contiguous pass per plane
    // that the compiler vectorizes: the strided per-channel loop below was scalar, ~8 % of the
    // pipeline's CPU time. Same arithmetic, so the same floats.
    thread_local std::vector<cv::Mat> planes;  // buffers reused from image to image
    cv::split(image, planes);
    for (int c = 0; c < ch; ++c) {
      const cv::Mat& p = planes[static_cast<size_t>(src[c])];
      float* d = dst + c * plane;
      const float s = sub[c], m = mul[c];
      for (int y = 0; y < h; ++y) {
        const uint8_t* in = p.ptr<uint8_t>(y);
        float* row = d + static_cast<size_t>(y) * w;
        for (int x = 0; x < w; ++x) row[x] = (static_cast<float>(in[x]) - s) * m;
      }
    }
    return;
  }
  for (int y = 0; y < h; ++y) {
    const size_t o = static_cast<size_t>(y) * w;
    const float* row = image.ptr<float>(y);
    for (int c = 0; c < ch; ++c) {
      float* d = dst + c * plane + o;
      const float s = sub[c], m = mul[c];
      const float* in = row + src[c];
      for (int x = 0; x < w; ++x) d[x] = (in[x * ch] - s) * m;
    }
  }
}

}  // namespace nanomx::io
