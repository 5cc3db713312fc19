#include "memory_profile.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "csv_line.h"
#include "json_out.h"
#include "trace_file.h"

namespace nanomx::trace {
namespace {

constexpr const char* kColumns[] = {"Attribute Name", "Requested Size", "Device", "Actual Size",
                                    "Reuse?"};
constexpr size_t kFieldCount = 5;
enum Field { kAttribute, kRequested, kDevice, kActual, kReuse };

// A real row is under a hundred bytes; the bound keeps a file that is not a profile (a binary, a
// one-line JSON trace) from being buffered whole before it is refused.
constexpr size_t kMaxLineBytes = size_t{1} << 20;

// Longest field value quoted in an error message.
constexpr size_t kShownValueBytes = 40;

// Reads a file line by line, each line without its "\n" or "\r\n".
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), buffer_(size_t{1} << 16) {
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  }
  ~LineReader() { std::fclose(file_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line; false at the end of the file.
  bool next(std::string* line) {
    line->clear();
    bool any = false;  // a line, perhaps empty, has begun
    for (;;) {
      if (begin_ == end_ && !refill()) break;
      const char* start = buffer_.data() + begin_;
      const void* newline = std::memchr(start, '\n', end_ - begin_);
      size_t n = newline ? static_cast<const char*>(newline) - start : end_ - begin_;
      if (line->size() + n > kMaxLineBytes) {
        throw TraceError(path_ + ": line " + std::to_string(line_number_ + 1) +
                         " is longer than 1 MiB; expected a GPU memory profile, a CSV of short "
                         "rows");
      }
      line->append(start, n);
      begin_ += n;
      any = true;
      if (newline) {
        ++begin_;
        break;
      }
    }
    if (!any) return false;
    ++line_number_;
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return true;
  }
  size_t line_number() const { return line_number_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  bool refill() {
    size_t n = std::fread(buffer_.data(), 1, buffer_.size(), file_);
    if (n == 0 && std::ferror(file_)) {
      throw TraceError(path_ + ": read error: " + std::strerror(errno));
    }
    begin_ = 0;
    end_ = n;
    bytes_read_ += n;
    return n > 0;
  }

  std::string path_;
  FILE* file_ = nullptr;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  size_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
};

// A value as an error message quotes it: cut to a readable length, control bytes as '?'.
std::string shown_value(std::string_view text) {
  std::string out(text.substr(0, kShownValueBytes));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (text.size() > kShownValueBytes) out += "...";
  return "\"" + out + "\"";
}

// Everything read so far, before the tree is built.
struct Totals {
  std::map<std::string, std::map<int, MemoryAmount>> by_attribute;  // attribute -> device -> sum
  int64_t requested = 0, actual = 0;  // over every file, to catch a sum beyond int64
  std::set<int> devices;
  std::optional<NvmlAmend> nvml;
};

class ProfileReader {
 public:
  ProfileReader(const std::string& path, Totals* totals) : path_(path), totals_(totals) {}

  MemoryProfileFile read() {
    LineReader lines(path_);
    std::string line;
    if (!lines.next(&line)) {
      throw TraceError(path_ +
                       ": empty file (0 bytes); expected a GPU memory profile: a CSV "
                       "whose first line is " +
                       std::string(kMemoryProfileHeader));
    }
    line_ = 1;
    check_header(line);
    MemoryProfileFile file;
    file.path = path_;
    std::vector<std::string> fields;
    while (lines.next(&line)) {
      line_ = lines.line_number();
      if (line.empty()) continue;  // a blank line (a trailing one, say) holds no row
      CsvLineError error;
      if (!split_csv_line(line, &fields, &error)) {
        std::string field =
            error.field < kFieldCount ? ", in \"" + std::string(kColumns[error.field]) + "\"" : "";
        throw TraceError(path_ + ": line " + std::to_string(line_) + ", column " +
                         std::to_string(error.column) + field + ": " + error.what);
      }
      read_row(fields, &file);
    }
    return file;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(path_ + ": line " + std::to_string(line_) + ": " + what);
  }

  void check_header(std::string line) {
    // A byte-order mark, as a spreadsheet saving "CSV UTF-8" writes, is not part of the header.
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    std::vector<std::string> fields;
    CsvLineError ignored;
    bool ok = split_csv_line(line, &fields, &ignored) && fields.size() == kFieldCount;
    for (size_t i = 0; ok && i < kFieldCount; ++i) ok = fields[i] == kColumns[i];
    if (!ok) {
      fail("not a GPU memory profile header: expected " + std::string(kMemoryProfileHeader) +
           ", found " + shown_value(line));
    }
  }

  // A size: decimal digits only. `signed_wrapped` (nvml_amend rows) also takes a '-' sign, and
  // reads 2^63 .. 2^64-1 as the negative numbers MXNet's unsigned subtraction wrapped.
  int64_t parse_size(const std::string& text, Field field, bool signed_wrapped) const {
    std::string_view digits = text;
    bool negative = !digits.empty() && digits[0] == '-';
    if (negative) digits.remove_prefix(1);
    const std::string column = "\"" + std::string(kColumns[field]) + "\" is " + shown_value(text);
    if (negative && !signed_wrapped) {
      fail(column +
           ", negative: expected a number of bytes, 0 or more (only an nvml_amend row "
           "may be negative)");
    }
    bool numeric = !digits.empty() && digits.size() <= 20 &&
                   digits.find_first_not_of("0123456789") == std::string_view::npos;
    uint64_t magnitude = 0;
    for (char c : numeric ? digits : std::string_view()) {
      if (__builtin_mul_overflow(magnitude, 10, &magnitude) ||
          __builtin_add_overflow(magnitude, static_cast<uint64_t>(c - '0'), &magnitude)) {
        numeric = false;
        break;
      }
    }
    const char* range = signed_wrapped ? "-9223372036854775808 to 18446744073709551615"
                                       : "0 to 9223372036854775807";
    if (!numeric) {
      fail(column + ": expected a number of bytes (digits only, " + range + ")");
    }
    if (signed_wrapped) {
      if (negative && magnitude > uint64_t{1} << 63) {
        fail(column + ": expected a number of bytes from " + range);
      }
      // Two's complement, as MXNet's size_t arithmetic left it.
      return static_cast<int64_t>(negative ? 0 - magnitude : magnitude);
    }
    if (magnitude > static_cast<uint64_t>(INT64_MAX)) {
      fail(column + ": expected a number of bytes from " + range);
    }
    return static_cast<int64_t>(magnitude);
  }

  int parse_device(const std::string& text) const {
    bool digits = !text.empty() && text.size() <= 10 &&
                  text.find_first_not_of("0123456789") == std::string::npos;
    long long value = digits ? std::stoll(text) : -1;
    if (!digits || value > INT_MAX) {
      fail("\"Device\" is " + shown_value(text) +
           ": expected a device number (digits only, 0 to 2147483647)");
    }
    return static_cast<int>(value);
  }

  bool parse_reuse(const std::string& text) const {
    if (text != "0" && text != "1") {
      fail("\"Reuse?\" is " + shown_value(text) + ": expected 0 or 1");
    }
    return text == "1";
  }

  void add_checked(int64_t* sum, int64_t value, const char* what) const {
    if (__builtin_add_overflow(*sum, value, sum)) {
      fail(std::string("the ") + what +
           " add up to more than 2^63 - 1 bytes (8 EiB), which no device holds: is a size wrong?");
    }
  }

  void read_row(const std::vector<std::string>& fields, MemoryProfileFile* file) {
    if (fields.size() != kFieldCount) {
      fail(std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields") +
           "; expected 5, as in the header " + kMemoryProfileHeader);
    }
    if (fields[kAttribute] == kColumns[kAttribute] && fields[kRequested] == kColumns[kRequested]) {
      fail(
          "a second header: files joined together? Give each profile as its own argument, "
          "and they are summed");
    }
    const std::string& attribute = fields[kAttribute];
    bool nvml = attribute == "nvml_amend";
    int64_t requested = parse_size(fields[kRequested], kRequested, nvml);
    int device = parse_device(fields[kDevice]);
    int64_t actual = parse_size(fields[kActual], kActual, nvml);
    bool reused = parse_reuse(fields[kReuse]);
    totals_->devices.insert(device);
    if (nvml) {
      // MXNet writes the same number in both size columns; the actual one is used.
      NvmlAmend& amend = totals_->nvml ? *totals_->nvml : totals_->nvml.emplace();
      add_checked(&amend.bytes, actual, "nvml_amend sizes");
      add_checked(&amend.by_device[device], actual, "nvml_amend sizes of the device");
      return;
    }
    // The totals over every file bound every sum the tree makes, since sizes are not negative.
    add_checked(&totals_->requested, requested, "requested sizes");
    add_checked(&totals_->actual, actual, "actual sizes");
    MemoryAmount& amount = totals_->by_attribute[attribute][device];
    amount.requested += requested;
    amount.actual += actual;
    ++amount.allocations;
    amount.reused += reused ? 1 : 0;
    ++file->allocations;
    file->actual += actual;
  }

  std::string path_;
  Totals* totals_;
  size_t line_ = 0;
};

void add_amount(MemoryAmount* into, const MemoryAmount& amount) {
  into->requested += amount.requested;
  into->actual += amount.actual;
  into->allocations += amount.allocations;
  into->reused += amount.reused;
}

void add_to_scope(MemoryScope* scope, const std::map<int, MemoryAmount>& by_device) {
  for (const auto& [device, amount] : by_device) {
    add_amount(&scope->amount, amount);
    add_amount(&scope->by_device[device], amount);
  }
}

// Code points of UTF-8 text, as a terminal lays them out (wide characters aside).
size_t display_width(std::string_view text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

// `text` cut to `width` code points, with "..." at the end when it was longer.
std::string fit_width(const std::string& text, size_t width) {
  if (display_width(text) <= width) return text;
  size_t keep = width > 3 ? width - 3 : 0, seen = 0, i = 0;
  for (; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && seen++ == keep) break;
  }
  return text.substr(0, i) + "...";
}

std::string pad_right(std::string text, size_t width) {
  size_t shown = display_width(text);
  if (shown < width) text.append(width - shown, ' ');
  return text;
}

std::string pad_left(const std::string& text, size_t width) {
  size_t shown = display_width(text);
  return shown < width ? std::string(width - shown, ' ') + text : text;
}

std::string format_share(int64_t part, int64_t total) {
  if (total <= 0) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f %%",
                100.0 * static_cast<double>(part) / static_cast<double>(total));
  return buffer;
}

void append_amount_json(std::string* out, const MemoryAmount& amount) {
  append_all(out, "\"requested_bytes\":", std::to_string(amount.requested),
             ",\"actual_bytes\":", std::to_string(amount.actual),
             ",\"allocations\":", std::to_string(amount.allocations),
             ",\"reused\":", std::to_string(amount.reused));
}

// A scope's fields, everything but its children.
void append_scope_json(std::string* out, const MemoryScope& scope, int64_t total_actual) {
  append_amount_json(out, scope.amount);
  *out += ",\"actual_pct\":";
  if (total_actual > 0) {
    char buffer[32];
    std::snprintf(
        buffer, sizeof buffer, "%.6g",
        100.0 * static_cast<double>(scope.amount.actual) / static_cast<double>(total_actual));
    *out += buffer;
  } else {
    *out += "null";
  }
  *out += ",\"devices\":[";
  bool first = true;
  for (const auto& [device, amount] : scope.by_device) {
    append_all(out, first ? "" : ",", "{\"device\":", std::to_string(device), ",");
    append_amount_json(out, amount);
    *out += "}";
    first = false;
  }
  *out += "]";
}

}  // namespace

MemoryProfile read_memory_profiles(const std::vector<std::string>& paths) {
  Totals totals;
  MemoryProfile profile;
  for (const std::string& path : paths) {
    profile.files.push_back(ProfileReader(path, &totals).read());
  }
  profile.devices.assign(totals.devices.begin(), totals.devices.end());
  profile.nvml = std::move(totals.nvml);

  // The tree: each attribute adds to the root and to the scope of every prefix of its
  // components. A scope is found by its parent's index and its name; keys by the whole prefix
  // would take memory quadratic in the number of components, which a hostile line makes large.
  profile.scopes.emplace_back();
  std::unordered_map<std::string, uint32_t> scope_of_key;
  std::string key;
  for (const auto& [attribute, by_device] : totals.by_attribute) {
    uint32_t node = 0;
    add_to_scope(&profile.scopes[0], by_device);
    for (size_t begin = 0;;) {
      size_t colon = attribute.find(':', begin);
      size_t end = colon == std::string::npos ? attribute.size() : colon;
      key.assign(reinterpret_cast<const char*>(&node), sizeof node);
      key.append(attribute, begin, end - begin);
      auto [found, inserted] =
          scope_of_key.try_emplace(key, static_cast<uint32_t>(profile.scopes.size()));
      if (inserted) {
        MemoryScope scope;
        scope.name = attribute.substr(begin, end - begin);
        scope.depth = profile.scopes[node].depth + 1;
        profile.scopes[node].children.push_back(found->second);
        profile.scopes.push_back(std::move(scope));
      }
      node = found->second;
      add_to_scope(&profile.scopes[node], by_device);
      if (colon == std::string::npos) break;
      begin = colon + 1;
    }
  }
  for (MemoryScope& scope : profile.scopes) {
    std::sort(scope.children.begin(), scope.children.end(), [&](uint32_t a, uint32_t b) {
      const MemoryScope& sa = profile.scopes[a];
      const MemoryScope& sb = profile.scopes[b];
      if (sa.amount.actual != sb.amount.actual) return sa.amount.actual > sb.amount.actual;
      return sa.name < sb.name;
    });
  }
  return profile;
}

std::vector<uint32_t> scopes_in_print_order(const MemoryProfile& profile,
                                            std::optional<size_t> max_depth) {
  std::vector<uint32_t> order;
  // Children pushed in reverse, so the first child is popped (printed) first.
  std::vector<uint32_t> pending(profile.root().children.rbegin(), profile.root().children.rend());
  while (!pending.empty()) {
    uint32_t index = pending.back();
    pending.pop_back();
    const MemoryScope& scope = profile.scopes[index];
    order.push_back(index);
    if (max_depth && scope.depth >= *max_depth) continue;  // its bytes are in its own row
    pending.insert(pending.end(), scope.children.rbegin(), scope.children.rend());
  }
  return order;
}

std::string format_bytes(int64_t bytes) {
  uint64_t magnitude = bytes < 0 ? 0 - static_cast<uint64_t>(bytes) : static_cast<uint64_t>(bytes);
  if (magnitude < 1024) return std::to_string(bytes) + " B";
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(magnitude) / 1024.0;
  size_t unit = 0;
  // Up a unit from where the 1-decimal form would round to 1024.0.
  while (value >= 1023.95 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, value >= 99.995 ? "%s%.1f %s" : "%s%.2f %s",
                bytes < 0 ? "-" : "", value, kUnits[unit]);
  return buffer;
}

std::string scope_label(const std::string& name) { return name.empty() ? "(empty name)" : name; }

MemoryRowText memory_row_text(const MemoryProfile& profile, const MemoryScope& scope) {
  MemoryRowText row;
  row.requested = format_bytes(scope.amount.requested);
  row.actual = format_bytes(scope.amount.actual);
  row.allocations = std::to_string(scope.amount.allocations);
  row.reused = std::to_string(scope.amount.reused);
  row.share = format_share(scope.amount.actual, profile.root().amount.actual);
  for (int device : profile.devices) {
    auto found = scope.by_device.find(device);
    row.device_actual.push_back(
        found == scope.by_device.end() ? "-" : format_bytes(found->second.actual));
  }
  return row;
}

MemoryRowText nvml_row_text(const MemoryProfile& profile) {
  MemoryRowText row;
  row.requested = "-";
  row.actual = format_bytes(profile.nvml->bytes);
  row.allocations = "-";
  row.reused = "-";
  row.share = "-";
  for (int device : profile.devices) {
    auto found = profile.nvml->by_device.find(device);
    row.device_actual.push_back(
        found == profile.nvml->by_device.end() ? "-" : format_bytes(found->second));
  }
  return row;
}

std::string memory_overview(const MemoryProfile& profile) {
  const MemoryAmount& total = profile.root().amount;
  std::string out = std::to_string(total.allocations) +
                    (total.allocations == 1 ? " allocation (" : " allocations (") +
                    std::to_string(total.reused) + " reused from the pool)";
  if (profile.devices.empty()) return out;
  if (profile.devices.size() == 1) {
    out += " on device ";
  } else {
    append_all(&out, " on ", std::to_string(profile.devices.size()), " devices: ");
  }
  for (size_t i = 0; i < profile.devices.size(); ++i) {
    append_all(&out, i ? ", " : "", std::to_string(profile.devices[i]));
  }
  return out;
}

std::string format_memory_text(const MemoryProfile& profile, std::optional<size_t> max_depth) {
  std::string out;
  if (profile.files.size() == 1) {
    append_all(&out, "GPU memory per scope: ", profile.files[0].path, "\n");
  } else {
    append_all(&out, "GPU memory per scope: ", std::to_string(profile.files.size()),
               " files, summed\n");
    for (const MemoryProfileFile& file : profile.files) {
      append_all(&out, "  ", file.path, ": ", std::to_string(file.allocations),
                 file.allocations == 1 ? " allocation, " : " allocations, ",
                 format_bytes(file.actual), " actual\n");
    }
  }
  append_all(&out, memory_overview(profile), "\n\n");

  // The name column: each level indented by two spaces, as wide as the longest name up to 60
  // (longer names are cut with "...", as in `diff`).
  std::vector<uint32_t> order = scopes_in_print_order(profile, max_depth);
  std::vector<std::string> names;
  names.reserve(order.size());
  size_t width = std::string_view("Scope").size();
  if (profile.nvml) width = std::string_view(kNvmlLabel).size();
  for (uint32_t index : order) {
    const MemoryScope& scope = profile.scopes[index];
    // The indent is cut at the column's widest, so a deep file does not make huge lines.
    names.push_back(std::string(std::min<size_t>(2 * (scope.depth - 1), 60), ' ') +
                    scope_label(scope.name));
    width = std::max(width, display_width(names.back()));
  }
  width = std::min<size_t>(width, 60);
  // More than one device: a column of actual bytes per device.
  bool per_device = profile.devices.size() > 1;
  std::vector<std::string> device_titles;
  std::vector<size_t> device_widths;
  if (per_device) {
    for (int device : profile.devices) {
      device_titles.push_back("gpu " + std::to_string(device) + " actual");
      device_widths.push_back(std::max<size_t>(12, device_titles.back().size() + 1));
    }
  }
  auto line = [&](const std::string& name, const std::string& requested, const std::string& actual,
                  const std::string& allocations, const std::string& reused,
                  const std::string& share, const std::vector<std::string>& devices) {
    append_all(&out, pad_right(fit_width(name, width), width), " ", pad_left(requested, 12), " ",
               pad_left(actual, 12), " ", pad_left(allocations, 8), " ", pad_left(reused, 8), " ",
               pad_left(share, 9));
    for (size_t i = 0; per_device && i < devices.size(); ++i) {
      append_all(&out, " ", pad_left(devices[i], device_widths[i]));
    }
    out += "\n";
  };
  auto row = [&](const std::string& name, const MemoryRowText& text) {
    line(name, text.requested, text.actual, text.allocations, text.reused, text.share,
         text.device_actual);
  };
  line("Scope", "Requested", "Actual", "Allocs", "Reused", "% actual", device_titles);
  size_t rule = width + 1 + 12 + 1 + 12 + 1 + 8 + 1 + 8 + 1 + 9;
  for (size_t w : device_widths) rule += 1 + w;
  out += std::string(rule, '-') + "\n";
  for (size_t i = 0; i < order.size(); ++i) {
    row(names[i], memory_row_text(profile, profile.scopes[order[i]]));
  }
  out += std::string(rule, '-') + "\n";
  row("total", memory_row_text(profile, profile.root()));
  if (profile.nvml) row(kNvmlLabel, nvml_row_text(profile));
  return out;
}

std::string format_memory_json(const MemoryProfile& profile, std::optional<size_t> max_depth) {
  const int64_t total_actual = profile.root().amount.actual;
  std::string out = "{\"files\":[";
  for (size_t i = 0; i < profile.files.size(); ++i) {
    const MemoryProfileFile& file = profile.files[i];
    append_all(&out, i ? "," : "", "{\"path\":");
    append_json_string(&out, file.path);
    append_all(&out, ",\"allocations\":", std::to_string(file.allocations),
               ",\"actual_bytes\":", std::to_string(file.actual), "}");
  }
  out += "],\"devices\":[";
  for (size_t i = 0; i < profile.devices.size(); ++i) {
    append_all(&out, i ? "," : "", std::to_string(profile.devices[i]));
  }
  append_all(&out, "],\"depth\":", max_depth ? std::to_string(*max_depth) : "null",
             ",\n\"total\":{");
  append_scope_json(&out, profile.root(), total_actual);
  out += "},\n\"nvml_amend\":";
  if (profile.nvml) {
    append_all(&out, "{\"bytes\":", std::to_string(profile.nvml->bytes), ",\"devices\":[");
    bool first = true;
    for (const auto& [device, bytes] : profile.nvml->by_device) {
      append_all(&out, first ? "" : ",", "{\"device\":", std::to_string(device),
                 ",\"bytes\":", std::to_string(bytes), "}");
      first = false;
    }
    out += "]}";
  } else {
    out += "null";
  }
  // Nested from the flat print order: each scope's object is left open at its "children" array
  // and closed when a scope at its depth or above follows (no recursion, whatever the nesting).
  out += ",\n\"scopes\":[";
  size_t open = 0;  // scope objects not closed yet: the depth of the previous scope
  for (uint32_t index : scopes_in_print_order(profile, max_depth)) {
    const MemoryScope& scope = profile.scopes[index];
    if (scope.depth <= open) {
      for (size_t level = scope.depth; level <= open; ++level) out += "]}";
      out += ",";
    }
    out += "\n{\"name\":";
    append_json_string(&out, scope.name);
    out += ",";
    append_scope_json(&out, scope, total_actual);
    out += ",\"children\":[";
    open = scope.depth;
  }
  for (; open > 0; --open) out += "]}";
  out += "\n]}\n";
  return out;
}

}  // namespace nanomx::trace
