#include "profiler/aggregate_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

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
  if (!std::signbit(d) && d < 1e11) {  // -0.0 is printed "-0.0000", as printf
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

constexpr size_t kNameWidth = 25, kNumberWidth = 16;

// "00".."99": two digits per step instead of one division per digit.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// Writes v's decimal digits ending at `end`; returns where they begin.
char* put_digits_backwards(char* end, uint64_t v) {
  while (v >= 100) {
    end -= 2;
    std::memcpy(end, kDigitPairs + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10) {
    end -= 2;
    std::memcpy(end, kDigitPairs + 2 * v, 2);
  } else {
    *--end = static_cast<char>('0' + v);
  }
  return end;
}

// "%.4f" of v right-aligned in a 16-character field at p (MXNet's setw(16)): the field is
// filled with spaces by one 16-byte store and the digits written over it from the right (no
// staging buffer: reading back what was just stored byte by byte stalls). Falls back to
// format_fixed4 outside the fast range (where the text may be wider than the field). Returns
// the end.
char* put_fixed4_right(char* p, float v) {
  const double d = static_cast<double>(v);
  if (std::signbit(d) || !(d < 1e11)) {  // -0.0 and NaN included
    char number[64];
    std::string_view text = format_fixed4(v, number);
    size_t pad = text.size() < kNumberWidth ? kNumberWidth - text.size() : 0;
    std::memset(p, ' ', pad);
    std::memcpy(p + pad, text.data(), text.size());
    return p + pad + text.size();
  }
  // d * 10000 is exact (a float's 24 bits times a 14-bit number); adding and subtracting 2^52
  // rounds it half to even, as printf does, without a libm call.
  const auto scaled = static_cast<uint64_t>((d * 10000.0 + 0x1p52) - 0x1p52);
  std::memset(p, ' ', kNumberWidth);
  char* end = p + kNumberWidth;
  const auto frac = static_cast<unsigned>(scaled % 10000);
  std::memcpy(end - 2, kDigitPairs + 2 * (frac % 100), 2);
  std::memcpy(end - 4, kDigitPairs + 2 * (frac / 100), 2);
  end[-5] = '.';
  put_digits_backwards(end - 5, scaled / 10000);  // at most 11 digits: 16 characters in all
  return end;
}

char* put_count_right(char* p, uint64_t count) {
  if (count < 10'000'000'000'000'000ull) {  // 16 digits at most: fits the field
    std::memset(p, ' ', kNumberWidth);
    put_digits_backwards(p + kNumberWidth, count);
    return p + kNumberWidth;
  }
  char digits[24];
  char* begin = put_digits_backwards(digits + sizeof digits, count);
  const auto len = static_cast<size_t>(digits + sizeof digits - begin);
  std::memcpy(p, begin, len);  // 17 digits or more: wider than the field, as setw allows
  return p + len;
}

}  // namespace

std::string format_aggregate_table(std::span<const AggregateCategory> categories) {
  std::string out =
      "\nProfile Statistics:\n\tNote the difference in units for different entries.\n";
  // Rows are written through a pointer into a small buffer (a few hundred rows: it stays in
  // the L1/L2 cache) and appended to `out` from there, which is reserved for the whole table
  // up front: one pass over the table's memory instead of writing a 1 MB staging buffer and
  // copying it out of a cold cache.
  constexpr size_t kChunkRows = 256;
  size_t total_bound = out.size();
  for (const auto& [category, rows] : categories) {
    const size_t numbers = is_memory_category(category) ? 3 : 4;
    total_bound += category.size() + 512;  // title and header
    for (const AggregateRow& row : rows)
      total_bound += std::max(row.name.size(), kNameWidth) + kNumberWidth + numbers * 17 + 1;
  }
  out.reserve(total_bound);
  static thread_local std::vector<char> chunk;
  for (const auto& [category, rows] : categories) {
    bool memory = is_memory_category(category);
    out.append(category);
    out.append("\n=================\n");
    append_header(&out, memory);
    for (size_t first = 0; first < rows.size(); first += kChunkRows) {
      const auto part = rows.subspan(first, std::min(kChunkRows, rows.size() - first));
      size_t bound = 0;  // worst case: the name, 20 digits of count, 64 characters per number
      for (const AggregateRow& row : part)
        bound += std::max(row.name.size(), kNameWidth) + 20 + (memory ? 3 : 4) * 65 + 1;
      if (chunk.size() < bound) chunk.resize(bound);
      char* const begin = chunk.data();
      char* p = begin;
      for (const AggregateRow& row : part) {
        std::memcpy(p, row.name.data(), row.name.size());
        p += row.name.size();
        if (row.name.size() < kNameWidth) {
          std::memset(p, ' ', kNameWidth - row.name.size());
          p += kNameWidth - row.name.size();
        }
        p = put_count_right(p, row.count);
        if (!memory) {
          *p++ = ' ';
          p = put_fixed4_right(p, row.total);
        }
        *p++ = ' ';
        p = put_fixed4_right(p, row.min);
        *p++ = ' ';
        p = put_fixed4_right(p, row.max);
        *p++ = ' ';
        p = put_fixed4_right(p, row.avg);
        *p++ = '\n';
      }
      out.append(begin, static_cast<size_t>(p - begin));
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
