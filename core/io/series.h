// Series: datasets of one group that grow together along axis 0, one row per logged step (the
// run log's /train, /eval and /diagnostics/<metric>).
//
// The group attribute `columns` lists the datasets in order. The column "step" is int64 (rows,),
// every other column float64 (rows, row_shape...). A row is complete once every column holds it:
// a writer killed in the middle of an append may leave some columns one row longer, and readers
// take the shortest column's length.
//
// `define` creates the column datasets, then the attribute: a writer killed between the two
// leaves a group with datasets but no `columns` (an interrupted definition). Such a series is
// `interrupted()`: readers report it as damaged, naming the group, and a resumed writer drops
// its datasets (drop_interrupted_definition) and defines it again. Nothing is lost: a series is
// defined by its first append, before that row is written.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/io/h5.h"

namespace attnlab::io {

class Series {
 public:
  // The series stored in `group`; undefined (no columns yet) if it has no `columns` attribute.
  static Series open(h5::Group group);

  bool defined() const { return !columns_.empty(); }
  // Datasets but no `columns` attribute: a definition a kill interrupted (see above).
  bool interrupted() const { return !orphans_.empty(); }
  // "/train: datasets (loss, step) without the attribute 'columns' (holding at most 1 row): its
  // definition was interrupted before its first row was flushed"; "" when not interrupted().
  std::string damage() const;
  // Deletes the datasets of an interrupted definition and returns damage() (then the series is
  // undefined and the next append defines it); "" when there was nothing to drop.
  std::string drop_interrupted_definition();
  const std::vector<std::string>& columns() const { return columns_; }
  std::vector<int64_t> row_shape(size_t column) const { return row_shapes_.at(column); }
  // Complete rows.
  int64_t rows() const { return rows_; }
  std::string where() const { return group_.where(); }

  // Creates the column datasets. `columns` must be distinct and hold "step" (whose row shape
  // must be scalar).
  void define(const std::vector<std::string>& columns,
              const std::vector<std::vector<int64_t>>& row_shapes);
  // Appends one row: values[c] points at the row_shape(c) values of column c (for "step" one
  // integral value, above the previous row's step). On failure the series is cut back to its
  // previous rows and the Error is rethrown.
  void append(const std::vector<const double*>& values);
  // Keeps the leading complete rows whose step is <= `step`; every column is cut to that length.
  void keep_steps_up_to(int64_t step);
  // The complete rows of column c as doubles, row-major.
  std::vector<double> read_column(size_t column) const;

 private:
  explicit Series(h5::Group group) : group_(std::move(group)) {}
  h5::Group group_;
  std::vector<std::string> columns_;
  std::vector<std::vector<int64_t>> row_shapes_;
  std::vector<h5::Dataset> datasets_;
  std::vector<std::string> orphans_;  // datasets of an interrupted definition
  int64_t orphan_rows_ = 0;           // the most rows any of them holds
  size_t step_column_ = 0;
  int64_t rows_ = 0;
  bool has_last_step_ = false;
  int64_t last_step_ = 0;
};

// "(step, loss, lr)"
std::string join_names(const std::vector<std::string>& names);

}  // namespace attnlab::io
