// im2rec (MXNet's tools/im2rec.py, docs/io.md "im2rec"): makes .lst image lists from a folder
// (--list) and packs the images of every <prefix>*.lst into .rec/.idx files, on a pool of threads,
// in list order.
#pragma once

#include <string>
#include <vector>

namespace nanomx::io {

// Runs im2rec with MXNet's options (args without the program name); returns the exit code.
// Messages go to stdout, warnings and errors to stderr.
int im2rec_main(const std::vector<std::string>& args);

}  // namespace nanomx::io
