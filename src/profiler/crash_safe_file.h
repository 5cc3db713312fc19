// A file whose visible content only ever changes by whole commits (docs/profiler.md#crash-safety).
//
// The content is a growing body (appended to, never rewritten) followed by a trailer that each
// commit replaces. A trace is such a file: the events are the body, the closing part (`]`,
// otherData, `}`) the trailer. JSON cannot be appended to in place atomically: a kill (SIGKILL
// interrupts a large write between pages), a full disk or any failed write would leave the
// file cut mid-event. So two files take turns: `path` (visible, the last commit) and a hidden
// work file beside it (`.<name>.nanomx-swap`). New body bytes and the new trailer go into the
// work file; a commit exchanges the two names in one `renameat2(RENAME_EXCHANGE)`, which the
// kernel does atomically. The file that just left `path` catches up, at the next append, with
// the bytes it missed (copied by the kernel from the other file), so every body byte is written
// twice but the cost per commit stays proportional to what is new, not to the file's size.
//
// The first commit renames the work file onto `path`: a trace is never visible empty or half
// written. A file system without RENAME_EXCHANGE (some network and FUSE file systems) gets a
// plain rename and a full copy into a fresh work file per commit: still atomic, slower.
#pragma once

#include <cstdint>
#include <string>

namespace nanomx::profiler {

class CrashSafeFile {
 public:
  CrashSafeFile() = default;
  CrashSafeFile(const CrashSafeFile&) = delete;
  CrashSafeFile& operator=(const CrashSafeFile&) = delete;
  ~CrashSafeFile();

  // Prepares the work file beside `path`; nothing appears at `path` until the first commit.
  // Throws nanomx::Error (with the path and the reason) when the directory or the work file
  // cannot be opened.
  void open(const std::string& path, bool sync);
  // Continues the file already at `path` whose body is its first `body_bytes` bytes (written by
  // an earlier CrashSafeFile of this process). Its content stays visible until the next commit.
  void reopen(const std::string& path, uint64_t body_bytes, bool sync);
  bool is_open() const { return dir_fd_ >= 0; }
  // Ends the commits: removes the work file and closes both; the content at `path` stays.
  void close();

  // Appends body bytes to the work file. Invisible until the next commit. Throws on a write
  // error, leaving the body as it was before the call.
  void append(const std::string& bytes);
  // Makes the body appended so far plus `trailer` the content of `path`, atomically. Throws on
  // an error, leaving `path` as it was (the body appended so far is kept for the next commit).
  void commit(const std::string& trailer);

  uint64_t body_bytes() const { return body_; }
  const std::string& path() const { return path_; }
  bool exchanges() const { return exchange_works_; }  // false: the full-copy fallback is in use

 private:
  void create_work_file();
  void catch_up();  // copies the body bytes the work file lacks from the visible file
  void write_at(int fd, const char* data, size_t size, uint64_t offset) const;

  std::string path_;
  std::string name_, work_name_;  // in the directory of dir_fd_
  int dir_fd_ = -1;
  int visible_fd_ = -1;  // -1 until the first commit
  int work_fd_ = -1;
  uint64_t body_ = 0;          // body bytes appended so far (committed or not)
  uint64_t visible_body_ = 0;  // body bytes of the committed content
  uint64_t work_body_ = 0;     // body bytes the work file holds (behind body_ after a commit)
  bool sync_ = false;
  bool exchange_works_ = true;
};

}  // namespace nanomx::profiler
