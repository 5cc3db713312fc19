#include "profiler/aggregate_table.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "profiler/json_string.h"

namespace nanomx::profiler {

bool is_memory_category(std::string_view category) {
  return category == "Device Storage" || category == "Pool Memory";
}

// The table's "%.4f" of a float. A float has 24 significant bits, so value * 10000 is exact
// in a double and rounding it half-to-even gives exactly what printf (and iostream, which
// MXNet uses) prints; done by hand because this runs once per column of every row.
std::string_view format_fixed4(float v, char* buffer) {
  double d = static_cast<double>(v);
  char* end;
  if (d >= 0 && d < 1e11) {
    auto scaled = static_cast<uint64_t>(std::nearbyint(d * 10000.0));
    end = std::to_chars(buffer, buffer + 40, scaled / 10000).ptr;
    unsigned frac = static_cast<unsigned>(scaled % 10000);
    *end++ = '.';
    *end++ = static_cast<char>('0' + frac / 1000);
    *end++ = static_cast<char>('0' + frac / 100 % 10);
    *end++ = static_cast<char>('0' + frac / 10 % 10);
    *end++ = static_cast<char>('0' + frac % 10);
  } else {  // not reached by durations, counts or byte counters in practice
    end = std::to_chars(buffer, buffer + 64, d, std::chars_format::fixed, 4).ptr;
  }
  return std::string_view(buffer, static_cast<size_t>(end - buffer));
}

// The JSON's 4 significant digits: std::to_chars in general notation formats as printf("%.4g").
std::string_view format_general4(float v, char* buffer) {
  char* end =
      std::to_chars(buffer, buffer + 64, static_cast<double>(v), std::chars_format::general, 4).ptr;
  return std::string_view(buffer, static_cast<size_t>(end - buffer));
}

namespace {

void append_padded(std::string* out, std::string_view text, int width, bool left) {
  int pad = width - static_cast<int>(text.size());
  if (!left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
  out->append(text);
  if (left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
}

void append_header(std::string* out, bool memory) {
  append_padded(out, "Name", 25, true);
  append_padded(out, "Total Count", 16, false);
  out->push_back(' ');
  if (!memory) {
    append_padded(out, "Time (ms)", 16, false);
    out->push_back(' ');
  }
  append_padded(out, memory ? "Min Use  (kB)" : "Min Time (ms)", 16, false);
  out->push_back(' ');
  append_padded(out, memory ? "Max Use  (kB)" : "Max Time (ms)", 16, false);
  out->push_back(' ');
  append_padded(out, memory ? "Avg Use  (kB)" : "Avg Time (ms)", 16, false);
  out->push_back('\n');
  append_padded(out, "----", 25, true);
  append_padded(out, "-----------", 16, false);
  out->push_back(' ');
  if (!memory) {
    append_padded(out, "---------", 16, false);
    out->push_back(' ');
  }
  for (int i = 0; i < 3; ++i) {
    if (i) out->push_back(' ');
    append_padded(out, "-------------", 16, false);
  }
  out->push_back('\n');
}

// One table row assembled in a stack buffer with the column padding done by memset, then
// appended once (10,000 rows in well under a millisecond is the goal).
class RowLine {
 public:
  void left(std::string_view text, size_t width) {
    put(text);
    if (text.size() < width) pad(width - text.size());
  }
  void right(std::string_view text, size_t width) {
    if (text.size() < width) pad(width - text.size());
    put(text);
  }
  void space() { put(" "); }
  void finish_into(std::string* out) {
    put("\n");
    out->append(overflow_.empty() ? std::string_view(buf_, size_) : std::string_view(overflow_));
    size_ = 0;
    overflow_.clear();
  }

 private:
  void put(std::string_view text) {
    if (overflow_.empty() && size_ + text.size() <= sizeof buf_) {
      std::memcpy(buf_ + size_, text.data(), text.size());
      size_ += text.size();
      return;
    }
    if (overflow_.empty()) overflow_.assign(buf_, size_);  // a very long name
    overflow_.append(text);
  }
  void pad(size_t n) {
    if (overflow_.empty() && size_ + n <= sizeof buf_) {
      std::memset(buf_ + size_, ' ', n);
      size_ += n;
      return;
    }
    if (overflow_.empty()) overflow_.assign(buf_, size_);
    overflow_.append(n, ' ');
  }
  char buf_[256];
  size_t size_ = 0;
  std::string overflow_;
};

}  // namespace

std::string format_aggregate_table(std::span<const AggregateCategory> categories) {
  std::string out =
      "\nProfile Statistics:\n\tNote the difference in units for different entries.\n";
  char number[64];
  RowLine line;
  for (const auto& [category, rows] : categories) {
    bool memory = is_memory_category(category);
    out.reserve(out.size() + 300 + rows.size() * 110);
    out.append(category);
    out.append("\n=================\n");
    append_header(&out, memory);
    for (const AggregateRow& row : rows) {
      line.left(row.name, 25);
      char* count_end = std::to_chars(number, number + 32, row.count).ptr;
      line.right(std::string_view(number, static_cast<size_t>(count_end - number)), 16);
      line.space();
      if (!memory) {
        line.right(format_fixed4(row.total, number), 16);
        line.space();
      }
      line.right(format_fixed4(row.min, number), 16);
      line.space();
      line.right(format_fixed4(row.max, number), 16);
      line.space();
      line.right(format_fixed4(row.avg, number), 16);
      line.finish_into(&out);
    }
    out.push_back('\n');
  }
  return out;
}

std::string format_aggregate_json(std::span<const AggregateCategory> categories) {
  std::string time_section, memory_section;
  char number[64];
  auto field = [&](std::string* s, const char* key, float value, bool last) {
    s->append("                \"").append(key).append("\": ");
    s->append(format_general4(value, number));
    s->append(last ? "\n" : ",\n");
  };
  for (const auto& [category, rows] : categories) {
    bool memory = is_memory_category(category);
    std::string& s = memory ? memory_section : time_section;
    if (!s.empty()) s.append("        ,\n");
    s.append("        ");
    append_json_string(&s, category);
    s.append(": {\n");
    bool first = true;
    for (const AggregateRow& row : rows) {
      if (!first) s.append("            ,\n");
      first = false;
      s.append("            ");
      append_json_string(&s, row.name);
      s.append(": {\n                \"Count\": ").append(std::to_string(row.count)).append(",\n");
      if (!memory) field(&s, "Total", row.total, false);
      field(&s, "Min", row.min, false);
      field(&s, "Max", row.max, false);
      field(&s, "Avg", row.avg, true);
      s.append("            }\n");
    }
    s.append("        }\n");
  }
  return "{\n    \"Time\": {\n" + time_section + "    }\n    ,\n    \"Memory\": {\n" +
         memory_section +
         "    }\n,\n    \"Unit\": {\n        \"Time\": \"ms\",\n        \"Memory\": \"kB\"\n    "
         "}\n}\n";
}

}  // namespace nanomx::profiler
