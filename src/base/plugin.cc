#include "base/plugin.h"

#include <dlfcn.h>

#include <cstdlib>

#include "nanomx/error.h"

namespace nanomx::plugin {
namespace {

// The directory of the binary holding this code (libnanomx.so, or a program linking the
// layers statically), with a trailing slash.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || info.dli_fname == nullptr)
    return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

}  // namespace

void* load(const char* file_name, const char* path_variable, int dlopen_flags,
           const std::string& what, const std::string& hint) {
  std::string tried;
  auto try_open = [&](const std::string& path) -> void* {
    void* library = dlopen(path.c_str(), dlopen_flags);
    if (library == nullptr) {
      const char* why = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(why != nullptr ? why : path);
    }
    return library;
  };
  if (const char* forced = std::getenv(path_variable); forced != nullptr && *forced != '\0') {
    void* library = try_open(forced);
    NANOMX_CHECK(library != nullptr)
        << what << ": cannot load " << forced << " (from " << path_variable << "): " << tried;
    return library;
  }
  if (void* library = try_open(own_directory() + file_name)) return library;
  if (void* library = try_open(file_name)) return library;
  fail(what, ": cannot load ", file_name, ": ", tried, " (", hint, "; or set ", path_variable,
       " to its path)");
}

void* entry_point(void* library, const char* symbol, const std::string& what) {
  void* address = dlsym(library, symbol);
  NANOMX_CHECK(address != nullptr) << what << ": the loaded library has no " << symbol;
  return address;
}

}  // namespace nanomx::plugin
