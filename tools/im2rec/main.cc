// im2rec: MXNet's tools/im2rec.py as a C++ command (docs/io.md, "im2rec"). `im2rec --list prefix
// root` writes prefix.lst; `im2rec prefix root` packs every prefix*.lst into .rec/.idx.
#include <cstdio>

#include "nanomx/c_api.h"

int main(int argc, char** argv) {
  int code = 0;
  if (NNIm2Rec(argc, const_cast<const char**>(argv), &code) != 0) {
    std::fprintf(stderr, "im2rec: error: %s\n", MXGetLastError());
    return 1;
  }
  return code;
}
