#include "io/image_record.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "nanomx/error.h"

namespace nanomx::io {

std::string pack_image_record(const ImageRecordHeader& header, const std::vector<float>& labels,
                              std::string_view image, bool multi_label) {
  ImageRecordHeader h = header;
  if (multi_label) {
    h.flag = static_cast<uint32_t>(labels.size());
    h.label = 0;
  } else {
    h.flag = 0;
    if (!labels.empty()) h.label = labels[0];
  }
  std::string out(kImageHeaderBytes + (multi_label ? 4 * labels.size() : 0) + image.size(), '\0');
  char* p = out.data();
  std::memcpy(p, &h.flag, 4);
  std::memcpy(p + 4, &h.label, 4);
  std::memcpy(p + 8, &h.id, 8);
  std::memcpy(p + 16, &h.id2, 8);
  p += kImageHeaderBytes;
  if (multi_label) {
    if (!labels.empty()) std::memcpy(p, labels.data(), 4 * labels.size());
    p += 4 * labels.size();
  }
  if (!image.empty()) std::memcpy(p, image.data(), image.size());
  return out;
}

ImageRecord unpack_image_record(std::string_view record, std::string_view where) {
  NANOMX_CHECK(record.size() >= kImageHeaderBytes)
      << "image record " << where << ": " << record.size()
      << " bytes is shorter than the 24-byte IRHeader (flag, label, id, id2)";
  ImageRecord r;
  const char* p = record.data();
  std::memcpy(&r.header.flag, p, 4);
  std::memcpy(&r.header.label, p + 4, 4);
  std::memcpy(&r.header.id, p + 8, 8);
  std::memcpy(&r.header.id2, p + 16, 8);
  size_t at = kImageHeaderBytes;
  if (r.header.flag > 0) {
    const uint64_t need = uint64_t{4} * r.header.flag;
    NANOMX_CHECK(need <= record.size() - at)
        << "image record " << where << ": the header says " << r.header.flag
        << " labels (flag) but only " << (record.size() - at) << " bytes follow the header";
    r.labels.resize(r.header.flag);
    std::memcpy(r.labels.data(), p + at, need);
    at += need;
  } else {
    r.labels.push_back(r.header.label);
  }
  r.image = record.substr(at);
  return r;
}

namespace {

// Parses an unsigned decimal number taking the whole of `text`.
bool parse_u64(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return out;
}

std::ifstream open_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  NANOMX_CHECK(in.good()) << what << ": cannot open '" << path << "': " << std::strerror(errno);
  return in;
}

}  // namespace

std::vector<IndexEntry> read_index(const std::string& path, uint64_t rec_size) {
  std::ifstream in = open_text(path, "RecordIO index");
  std::vector<IndexEntry> out;
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string_view text = trim(line);
    if (text.empty()) continue;
    const auto cols = split_tabs(text);
    IndexEntry e{};
    NANOMX_CHECK(cols.size() == 2 && parse_u64(trim(cols[0]), e.key) &&
                 parse_u64(trim(cols[1]), e.offset))
        << "RecordIO index '" << path << "' line " << number << ": expected '<key>\\t<offset>' "
        << "(two unsigned decimal numbers), got '" << text.substr(0, 80) << "'";
    NANOMX_CHECK(e.offset < rec_size) << "RecordIO index '" << path << "' line " << number
                                      << ": key " << e.key << " points to byte offset " << e.offset
                                      << ", beyond the record file (" << rec_size << " bytes)";
    NANOMX_CHECK(e.offset % 4 == 0)
        << "RecordIO index '" << path << "' line " << number << ": key " << e.key
        << " points to byte offset " << e.offset << ", which is not 4-byte aligned (records "
        << "start at multiples of 4)";
    out.push_back(e);
  }
  return out;
}

std::vector<ListEntry> read_list(const std::string& path) {
  std::ifstream in = open_text(path, "image list");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_list(text, "'" + path + "'");
}

std::vector<ListEntry> parse_list(std::string_view all, const std::string& source) {
  std::vector<ListEntry> out;
  size_t number = 0;
  while (!all.empty()) {
    const size_t nl = all.find('\n');
    const std::string_view line = all.substr(0, nl);
    all.remove_prefix(nl == std::string_view::npos ? all.size() : nl + 1);
    ++number;
    const std::string_view text = trim(line);
    if (text.empty()) continue;
    const auto cols = split_tabs(text);
    NANOMX_CHECK(cols.size() >= 3)
        << "image list " << source << " line " << number
        << ": expected 'index\\tlabel[\\tlabel...]\\tpath' (at least 3 tab-separated columns), "
        << "got " << cols.size() << " column(s)";
    ListEntry e;
    NANOMX_CHECK(parse_u64(trim(cols[0]), e.index))
        << "image list " << source << " line " << number << ": the index '" << cols[0]
        << "' is not an unsigned integer";
    for (size_t i = 1; i + 1 < cols.size(); ++i) {
      const std::string value(trim(cols[i]));
      char* end = nullptr;
      const float v = std::strtof(value.c_str(), &end);
      NANOMX_CHECK(!value.empty() && end == value.c_str() + value.size())
          << "image list " << source << " line " << number << ": label " << i << " '" << value
          << "' is not a number";
      e.labels.push_back(v);
    }
    e.path = std::string(cols.back());
    NANOMX_CHECK(!e.path.empty()) << "image list " << source << " line " << number
                                  << ": the path (last column) is empty";
    out.push_back(std::move(e));
  }
  return out;
}

std::string format_list_line(const ListEntry& entry) {
  std::string out = std::to_string(entry.index);
  char buf[64];
  for (float v : entry.labels) {
    std::snprintf(buf, sizeof buf, "\t%f", static_cast<double>(v));
    out += buf;
  }
  out += '\t';
  out += entry.path;
  out += '\n';
  return out;
}

}  // namespace nanomx::io
