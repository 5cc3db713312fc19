// Uses the installed headers and libnanomx.so only: the C++ profiler API around arrays computed
// through the C API. Prints "sum=<value>" and writes the trace named by argv[1].
#include <nanomx/c_api.h>
#include <nanomx/c_api_io.h>
#include <nanomx/profiler.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace prof = nanomx::profiler;

static void check(int rc, const char* what) {
  if (rc != 0) {
    std::fprintf(stderr, "%s failed: %s\n", what, MXGetLastError());
    std::exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer TRACE.json\n");
    return 2;
  }
  prof::set_config({{"profile_all", "true"}, {"aggregate_stats", "true"}, {"filename", argv[1]}});
  prof::set_state(prof::State::kRunning);
  prof::Domain domain("consumer");
  prof::Counter steps(domain, "steps");

  const mx_uint shape[] = {2, 3};
  NDArrayHandle a = nullptr;
  check(MXNDArrayCreateEx(shape, 2, 1, 0, 0, 0, &a), "MXNDArrayCreateEx");
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  check(MXNDArraySyncCopyFromCPU(a, values.data(), values.size()), "MXNDArraySyncCopyFromCPU");
  OpHandle add = nullptr;
  check(NNGetOpHandle("broadcast_add", &add), "NNGetOpHandle");
  NDArrayHandle inputs[] = {a, a};
  int num_outputs = 0;
  NDArrayHandle* outputs = nullptr;
  {
    NANOMX_PROFILE_SCOPE("add twice");
    check(MXImperativeInvoke(add, 2, inputs, &num_outputs, &outputs, 0, nullptr, nullptr),
          "MXImperativeInvoke");
    steps.set_value(1);
  }
  NDArrayHandle sum = outputs[0];
  std::vector<float> result(6);
  check(MXNDArraySyncCopyToCPU(sum, result.data(), result.size()), "MXNDArraySyncCopyToCPU");
  float total = 0;
  for (float v : result) total += v;
  check(MXNDArrayFree(sum), "MXNDArrayFree");
  check(MXNDArrayFree(a), "MXNDArrayFree");

  // A PNG round trip: the codecs are a plugin (libnanomx_imgcodecs.so) that the library loads
  // from beside itself, so this fails when `install` leaves the plugin out.
  const unsigned char pixels[2 * 2 * 3] = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110};
  const char* png = nullptr;
  size_t png_size = 0;
  check(NNImageEncode(pixels, 2, 2, 3, ".png", 3, &png, &png_size), "NNImageEncode");
  NDArrayHandle decoded = nullptr;
  check(NNImageDecode(png, png_size, 1, 0, &decoded), "NNImageDecode");
  unsigned char back[2 * 2 * 3] = {};
  check(MXNDArraySyncCopyToCPU(decoded, back, sizeof back), "MXNDArraySyncCopyToCPU");
  check(MXNDArrayFree(decoded), "MXNDArrayFree");
  for (size_t i = 0; i < sizeof back; ++i) {
    if (back[i] != pixels[i]) {
      std::fprintf(stderr, "PNG round trip changed byte %zu\n", i);
      return 1;
    }
  }
  std::printf("png round trip ok\n");

  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  const std::string table = prof::dumps();
  std::printf("sum=%g\n%s", total, table.c_str());
  return table.find("broadcast_add") == std::string::npos ? 1 : 0;
}
