#include "profiler/crash_safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "nanomx/error.h"

namespace nanomx::profiler {

namespace {

// renameat2's flag, spelled out: glibc 2.36 declares renameat2 in <stdio.h> only with
// _GNU_SOURCE, which g++ defines, but RENAME_EXCHANGE lives in <linux/fs.h>.
constexpr unsigned kRenameExchange = 1u << 1;

std::pair<std::string, std::string> split_path(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

CrashSafeFile::~CrashSafeFile() { close(); }

void CrashSafeFile::write_at(int fd, const char* data, size_t size, uint64_t offset) const {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail("profiler: cannot write trace file '", path_,
           "': ", n == 0 ? "no progress" : std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void CrashSafeFile::create_work_file() {
  // O_TRUNC: a work file left by a killed run of the same trace is reused.
  int fd = ::openat(dir_fd_, work_name_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fail("profiler: cannot create the work file '", work_name_, "' beside trace file '", path_,
         "': ", std::strerror(errno));
  }
  work_fd_ = fd;
  work_body_ = 0;
}

void CrashSafeFile::open(const std::string& path, bool sync) {
  close();
  auto [dir, name] = split_path(path);
  NANOMX_CHECK(!name.empty()) << "profiler: trace file '" << path << "' names a directory";
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    fail("profiler: cannot open the directory '", dir, "' of trace file '", path,
         "': ", std::strerror(errno));
  }
  dir_fd_ = dir_fd;
  path_ = path;
  name_ = name;
  work_name_ = "." + name + ".nanomx-swap";
  sync_ = sync;
  body_ = visible_body_ = 0;
  try {
    create_work_file();
  } catch (...) {
    close();
    throw;
  }
}

void CrashSafeFile::reopen(const std::string& path, uint64_t body_bytes, bool sync) {
  open(path, sync);
  int fd = ::openat(dir_fd_, name_.c_str(), O_RDWR | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < body_bytes) {
    int error = fd < 0 ? errno : 0;
    if (fd >= 0) ::close(fd);
    close();
    fail("profiler: cannot continue trace file '", path,
         "': ", error ? std::strerror(error) : "it is shorter than what this process wrote to it");
  }
  visible_fd_ = fd;
  body_ = visible_body_ = body_bytes;
}

void CrashSafeFile::close() {
  if (work_fd_ >= 0) {
    ::close(work_fd_);
    ::unlinkat(dir_fd_, work_name_.c_str(), 0);
  }
  if (visible_fd_ >= 0) ::close(visible_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  work_fd_ = visible_fd_ = dir_fd_ = -1;
  body_ = visible_body_ = work_body_ = 0;
}

void CrashSafeFile::catch_up() {
  if (work_body_ >= visible_body_) return;
  // In the kernel (page cache to page cache); a read/write loop where it is not supported.
  loff_t in = static_cast<loff_t>(work_body_), out = in;
  while (work_body_ < visible_body_) {
    ssize_t n = ::copy_file_range(visible_fd_, &in, work_fd_, &out,
                                  static_cast<size_t>(visible_body_ - work_body_), 0);
    if (n > 0) {
      work_body_ += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
      fail("profiler: cannot copy into the work file of trace file '", path_,
           "': ", std::strerror(errno));
    }
    std::vector<char> buffer(1u << 20);
    while (work_body_ < visible_body_) {
      size_t want =
          static_cast<size_t>(std::min<uint64_t>(buffer.size(), visible_body_ - work_body_));
      ssize_t got = ::pread(visible_fd_, buffer.data(), want, static_cast<off_t>(work_body_));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fail("profiler: cannot read trace file '", path_,
             "': ", got == 0 ? "it is shorter than expected" : std::strerror(errno));
      }
      write_at(work_fd_, buffer.data(), static_cast<size_t>(got), work_body_);
      work_body_ += static_cast<uint64_t>(got);
    }
    return;
  }
}

void CrashSafeFile::append(const std::string& bytes) {
  NANOMX_CHECK(is_open()) << "profiler: no trace file open";
  if (work_fd_ < 0) create_work_file();  // a failed commit's fallback may have left none
  catch_up();
  write_at(work_fd_, bytes.data(), bytes.size(), work_body_);
  work_body_ += bytes.size();
  body_ = work_body_;
}

void CrashSafeFile::commit(const std::string& trailer) {
  NANOMX_CHECK(is_open()) << "profiler: no trace file open";
  if (work_fd_ < 0) create_work_file();  // a failed commit's fallback may have left none
  catch_up();
  write_at(work_fd_, trailer.data(), trailer.size(), work_body_);
  const uint64_t size = work_body_ + trailer.size();
  if (::ftruncate(work_fd_, static_cast<off_t>(size)) != 0) {
    fail("profiler: cannot set the size of the work file of trace file '", path_,
         "': ", std::strerror(errno));
  }
  if (sync_ && ::fdatasync(work_fd_) != 0) {
    fail("profiler: cannot sync trace file '", path_, "': ", std::strerror(errno));
  }
  bool exchanged = false;
  if (visible_fd_ >= 0 && exchange_works_) {
    if (::renameat2(dir_fd_, work_name_.c_str(), dir_fd_, name_.c_str(), kRenameExchange) == 0) {
      exchanged = true;
    } else if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
      exchange_works_ = false;
      std::fprintf(stderr,
                   "nanomx profiler: the file system of '%s' cannot exchange two names; each "
                   "flush now copies the whole trace (slower, still crash-safe)\n",
                   path_.c_str());
    } else if (errno != ENOENT) {  // ENOENT: someone removed `path`; a rename recreates it
      fail("profiler: cannot commit trace file '", path_, "': ", std::strerror(errno));
    }
  }
  if (!exchanged) {
    if (::renameat(dir_fd_, work_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
      fail("profiler: cannot commit trace file '", path_, "': ", std::strerror(errno));
    }
  }
  if (sync_) ::fsync(dir_fd_);  // the rename itself, for power loss
  // The work file is now `path`; the old visible file becomes the work file (exchanged) or
  // lost its name (renamed), in which case a fresh work file starts empty and catches up.
  if (exchanged) {
    std::swap(visible_fd_, work_fd_);
    std::swap(visible_body_, work_body_);
    visible_body_ = body_;
    return;
  }
  if (visible_fd_ >= 0) ::close(visible_fd_);
  visible_fd_ = work_fd_;
  visible_body_ = body_;
  work_fd_ = -1;
  create_work_file();
}

}  // namespace nanomx::profiler
