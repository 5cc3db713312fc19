// One line of a CSV file split into its fields, with RFC 4180's quoting: a field is either bare
// (no quote in it) or quoted, a quote inside a quoted field written twice (""). A record never
// spans lines: the writers read here (MXNet's and nanomx's GPU memory profile) put one record on
// each line, so a quote left open at the end of a line is reported there, not searched for in
// the rest of the file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nanomx::trace {

// Why a line is not valid CSV: what was found, where (1-based byte column in the line), and in
// which field (0-based).
struct CsvLineError {
  size_t column = 0;
  size_t field = 0;
  std::string what;
};

// Splits `line` (without its line ending) into `fields`, quotes removed and doubled quotes
// undone. Returns false, with `error` filled, when the line is not valid CSV.
bool split_csv_line(std::string_view line, std::vector<std::string>* fields, CsvLineError* error);

}  // namespace nanomx::trace
