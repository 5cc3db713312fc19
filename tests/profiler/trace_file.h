// Test helpers: read a trace file written by the profiler and pick events out of it.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace nanomx::testing {

using json = nlohmann::json;

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Parses the whole file; throws json::parse_error when it is not valid JSON.
inline json read_trace(const std::string& path) { return json::parse(read_text(path)); }

inline std::vector<json> events_where(const json& trace, const std::string& key,
                                      const std::string& value) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.contains(key) && e[key] == value) out.push_back(e);
  return out;
}

inline std::vector<json> events_named(const json& trace, const std::string& name) {
  return events_where(trace, "name", name);
}

// The process_name given to `pid` in this file, or "" when there is none.
inline std::string process_name(const json& trace, int64_t pid) {
  for (const auto& e : trace.at("traceEvents"))
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == pid) return e["args"]["name"];
  return "";
}

inline std::string thread_name(const json& trace, int64_t pid, int64_t tid) {
  for (const auto& e : trace.at("traceEvents"))
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid && e["tid"] == tid)
      return e["args"]["name"];
  return "";
}

}  // namespace nanomx::testing
