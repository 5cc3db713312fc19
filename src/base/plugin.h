// Optional parts of nanomx that live in their own shared libraries and are loaded on first use,
// so that a process that never needs them never pays for loading what they link: the MPI
// transport (libmpi, docs/kvstore.md) and OpenCV's image codecs (imgcodecs pulls in ~120
// libraries, GDAL's among them: ~0.14 s and ~45 MB at start, docs/io.md).
#pragma once

#include <string>

namespace nanomx::plugin {

// dlopens `file_name`: the path in the environment variable `path_variable` when it is set
// (and nothing else then), else the file beside the library holding this code (libnanomx.so,
// where the build and `install` put plugins), else `file_name` on the dynamic linker's search
// path. Throws naming every path tried, dlerror()'s reasons and `hint` when none loads.
// `dlopen_flags`: RTLD_NOW plus RTLD_GLOBAL or RTLD_LOCAL.
void* load(const char* file_name, const char* path_variable, int dlopen_flags,
           const std::string& what, const std::string& hint);

// The entry point `symbol` of a library load() returned; throws naming it when it is missing.
void* entry_point(void* library, const char* symbol, const std::string& what);

}  // namespace nanomx::plugin
