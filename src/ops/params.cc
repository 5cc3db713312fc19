// Params: reading an operator's attribute text (numbers, booleans, tuples, dtypes, shapes,
// contexts) with errors that name the operator, the attribute and what was expected.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "ops/registry.h"

namespace nanomx::ops {
namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::optional<int64_t> parse_int_text(const std::string& text) {
  std::string t = trim(text);
  if (!t.empty() && (t.back() == 'L' || t.back() == 'l')) t.pop_back();  // Python 2 longs
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace

Params::Params(const Op& op, const Attrs& attrs) : op_name_(op.name), attrs_(attrs) {
  for (const auto& [key, value] : attrs) {
    if (op.any_keys) break;
    if (std::find(op.keys.begin(), op.keys.end(), key) != op.keys.end()) continue;
    std::ostringstream valid;
    for (size_t i = 0; i < op.keys.size(); ++i) valid << (i ? ", " : "") << op.keys[i];
    NANOMX_THROW() << op.name << ": unknown attribute '" << key
                   << "' (valid: " << (op.keys.empty() ? "none" : valid.str()) << ")";
  }
  for (size_t i = 0; i < attrs.size(); ++i) {
    for (size_t j = i + 1; j < attrs.size(); ++j) {
      NANOMX_CHECK(attrs[i].first != attrs[j].first)
          << op.name << ": attribute '" << attrs[i].first << "' given twice";
    }
  }
}

const std::string* Params::find(std::string_view key) const {
  for (const auto& [k, v] : attrs_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const std::string* Params::require(std::string_view key) const {
  const std::string* v = find(key);
  NANOMX_CHECK(v != nullptr) << op_name_ << ": required attribute '" << key << "' is missing";
  return v;
}

void Params::bad(std::string_view key, const std::string& value, const char* kind) const {
  NANOMX_THROW() << op_name_ << ": attribute '" << key << "' = '" << value << "' is not " << kind;
  std::abort();  // unreachable: the line above throws
}

double Params::get_float(std::string_view key, std::optional<double> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  {
    // The common text (Python's repr of a float, "1.0", "-0.5", "1e-08") through from_chars:
    // correctly rounded like strtod, at a fraction of its cost. Anything else (a '+', hex,
    // out of range) takes strtod's path below, as before.
    std::string_view view = *v;
    while (!view.empty() && std::isspace(static_cast<unsigned char>(view.front()))) {
      view.remove_prefix(1);
    }
    while (!view.empty() && std::isspace(static_cast<unsigned char>(view.back()))) {
      view.remove_suffix(1);
    }
    double d = 0;
    const char* end = view.data() + view.size();
    const auto [ptr, ec] = std::from_chars(view.data(), end, d);
    if (!view.empty() && ec == std::errc() && ptr == end) return d;
  }
  std::string t = trim(*v);
  if (t == "inf" || t == "+inf") return INFINITY;
  if (t == "-inf") return -INFINITY;
  if (t == "nan") return NAN;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0') bad(key, *v, "a number");
  return d;
}

int64_t Params::get_int(std::string_view key, std::optional<int64_t> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  auto parsed = parse_int_text(*v);
  if (!parsed) bad(key, *v, "an integer");
  return *parsed;
}

bool Params::get_bool(std::string_view key, std::optional<bool> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  const std::string t = trim(*v);
  if (t == "True" || t == "true" || t == "1") return true;
  if (t == "False" || t == "false" || t == "0") return false;
  bad(key, *v, "a boolean (True, False, 1, 0)");
}

std::string Params::get_string(std::string_view key, std::optional<std::string> fallback) const {
  const std::string* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    v = require(key);
  }
  std::string t = trim(*v);
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front()) {
    t = t.substr(1, t.size() - 2);
  }
  return t;
}

DType Params::get_dtype(std::string_view key, DType fallback) const {
  const std::string* v = find(key);
  if (!v || get_string(key) == "None") return fallback;
  try {
    return parse_dtype(get_string(key));
  } catch (const Error& e) {
    NANOMX_THROW() << op_name_ << ": attribute '" << key << "': " << e.what();
  }
  return fallback;
}

std::optional<std::vector<std::optional<int64_t>>> Params::get_tuple(std::string_view key) const {
  const std::string* v = find(key);
  if (!v) return std::nullopt;
  std::string t = trim(*v);
  if (t == "None") return std::nullopt;
  std::vector<std::optional<int64_t>> result;
  if (!t.empty() && (t.front() == '(' || t.front() == '[')) {
    const char close = t.front() == '(' ? ')' : ']';
    if (t.back() != close) bad(key, *v, "a tuple");
    t = t.substr(1, t.size() - 2);
    if (trim(t).empty()) return result;
    std::stringstream ss(t);
    std::string item;
    std::vector<std::string> items;
    while (std::getline(ss, item, ',')) items.push_back(trim(item));
    if (!items.empty() && items.back().empty()) items.pop_back();  // "(3,)"
    for (const std::string& it : items) {
      if (it == "None") {
        result.push_back(std::nullopt);
        continue;
      }
      auto parsed = parse_int_text(it);
      if (!parsed) bad(key, *v, "a tuple of integers");
      result.push_back(*parsed);
    }
    return result;
  }
  auto parsed = parse_int_text(t);
  if (!parsed) bad(key, *v, "an integer or a tuple of integers");
  result.push_back(*parsed);
  return result;
}

std::optional<std::vector<int64_t>> Params::get_ints(std::string_view key) const {
  auto tuple = get_tuple(key);
  if (!tuple) return std::nullopt;
  std::vector<int64_t> result;
  for (const auto& item : *tuple) {
    if (!item) bad(key, *find(key), "a tuple of integers (None is not allowed here)");
    result.push_back(*item);
  }
  return result;
}

std::optional<std::vector<double>> Params::get_floats(std::string_view key) const {
  const std::string* v = find(key);
  if (!v) return std::nullopt;
  std::string t = trim(*v);
  if (!t.empty() && (t.front() == '(' || t.front() == '[')) {
    const char close = t.front() == '(' ? ')' : ']';
    if (t.back() != close) bad(key, *v, "a tuple of numbers");
    t = t.substr(1, t.size() - 2);
  }
  std::vector<double> result;
  std::stringstream ss(t);
  std::string item;
  std::vector<std::string> items;
  while (std::getline(ss, item, ',')) items.push_back(trim(item));
  if (!items.empty() && items.back().empty()) items.pop_back();  // "(0.5,)"
  for (const std::string& it : items) {
    char* end = nullptr;
    const double d = std::strtod(it.c_str(), &end);
    if (it.empty() || *end != '\0') bad(key, *v, "a tuple of numbers");
    result.push_back(d);
  }
  return result;
}

Shape Params::get_shape(std::string_view key) const {
  require(key);
  auto dims = get_ints(key);
  if (!dims) bad(key, *find(key), "a shape");
  for (int64_t d : *dims) {
    if (d < 0) bad(key, *find(key), "a shape (negative dimension)");
  }
  return Shape(*dims);
}

Context parse_ctx(const Params& p) {
  if (!p.has("ctx")) return Context::cpu(0);
  const std::string text = p.get_string("ctx");
  if (text.empty() || text == "None") return Context::cpu(0);
  int type = 0;
  std::string id_text;
  for (auto [prefix, code] : {std::pair{"cpu_pinned(", 3}, std::pair{"cpu_shared(", 5},
                              std::pair{"cpu(", 1}, std::pair{"gpu(", 2}}) {
    const std::string pre = prefix;
    if (text.rfind(pre, 0) == 0 && text.back() == ')') {
      type = code;
      id_text = text.substr(pre.size(), text.size() - pre.size() - 1);
      break;
    }
  }
  auto id = parse_int_text(id_text);
  NANOMX_CHECK(type != 0 && id) << p.op() << ": attribute 'ctx' = '" << text
                                << "' is not a context (cpu(0), gpu(0), ...)";
  return make_context(type, static_cast<int>(*id));
}

}  // namespace nanomx::ops
