// The parsed attributes of Convolution, Deconvolution and UpSampling (ops/convolution.cc), and
// the geometry every device's kernels compute them with. The semantics are MXNet 1.9.1's
// (src/operator/nn/convolution-inl.h, deconvolution-inl.h, upsampling-inl.h).
#pragma once

#include <array>
#include <cstdint>

#include "nanomx/shape.h"

namespace nanomx::ops {

// One entry per spatial axis (depth, height, width; the first `nd` are used).
using ConvDims = std::array<int64_t, 3>;

// Convolution's attributes. Only the NCW / NCHW / NCDHW layouts exist here (MXNet 1.9.1 runs
// NHWC and NDHWC on GPU only), so the layout is the one the kernel's rank implies.
struct ConvolutionParams {
  int nd = 2;  // spatial axes: the kernel's rank, 1 to 3
  ConvDims kernel{}, stride{}, dilate{}, pad{};
  int64_t num_filter = 0;
  int64_t num_group = 1;
  bool no_bias = false;
  bool cudnn_off = false;
  int8_t cudnn_tune = -1;  // -1 None, 0 off, 1 limited_workspace, 2 fastest: accepted, unused
  int64_t workspace = 1024;
};

// Deconvolution's: Convolution's plus the output adjustment. With a target shape, pad and adj
// are derived from the input's size instead (deconvolution_pad_adj).
struct DeconvolutionParams : ConvolutionParams {
  ConvDims adj{};
  ConvDims target{};
  bool has_target = false;
};

enum class UpSampleType { kNearest, kBilinear };
enum class UpSampleMode { kConcat, kSum };

struct UpSamplingParams {
  int64_t scale = 1;
  int64_t num_filter = 0;
  UpSampleType type = UpSampleType::kNearest;
  UpSampleMode mode = UpSampleMode::kConcat;
  int64_t num_args = 0;  // 0: not given (the call's input count)
  int64_t workspace = 512;
};

// One convolution from a source to a destination, all sizes known: Convolution is one from its
// data to its output, and Deconvolution the transpose of one from its output back to its data,
// so both (and bilinear UpSampling) run through the same three directions (forward, data
// gradient, weight gradient). Weights are (out_channels, in_channels / groups, kernel...).
struct ConvGeometry {
  int nd = 2;
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  ConvDims src{}, dst{}, kernel{}, stride{}, dilate{}, pad_lo{}, pad_hi{};
};

// The extent of a dilated kernel on axis i: (k - 1) * d + 1.
inline int64_t dilated_extent(const ConvolutionParams& p, int i) {
  return (p.kernel[i] - 1) * p.dilate[i] + 1;
}

// Deconvolution's pad and adj for data of these spatial sizes (MXNet's InferPad): the
// attributes, or with target_shape the padding that gives it, the odd remainder in adj. Throws
// naming the shapes when the target cannot be reached.
void deconvolution_pad_adj(const DeconvolutionParams& p, const ConvDims& data_spatial,
                           ConvDims& pad, ConvDims& adj);

ConvGeometry convolution_geometry(const ConvolutionParams& p, const Shape& data, const Shape& out);
ConvGeometry deconvolution_geometry(const DeconvolutionParams& p, const Shape& data,
                                    const Shape& out);

// Bilinear UpSampling is this Deconvolution (MXNet's GetDeconvolutionParam): kernel
// 2 * scale - scale % 2, stride scale, pad ceil((scale - 1) / 2), one group per channel.
DeconvolutionParams upsampling_deconvolution(const UpSamplingParams& p);

}  // namespace nanomx::ops
