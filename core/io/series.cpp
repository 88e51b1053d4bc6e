// Series: columns that grow together, with complete-row bookkeeping and truncation by step.
#include "core/io/series.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/util/check.h"

namespace attnlab::io {

namespace {

constexpr const char* kStep = "step";

// About 8 KiB per chunk: small enough that a short run stays small, large enough that a long one
// has few chunks.
int64_t chunk_rows(const std::vector<int64_t>& row_shape) {
  int64_t row_values = 1;
  for (int64_t extent : row_shape) row_values *= extent;
  return std::max<int64_t>(1, 1024 / row_values);
}

}  // namespace

std::string join_names(const std::vector<std::string>& names) {
  std::string text = "(";
  for (size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
  return text + ")";
}

Series Series::open(h5::Group group) {
  Series series(std::move(group));
  if (!series.group_.has_attribute("columns")) {
    for (const std::string& name : series.group_.names()) {
      if (!series.group_.has_dataset(name)) continue;
      series.orphans_.push_back(name);
      const std::vector<int64_t> dims = series.group_.dataset(name).dims();
      if (!dims.empty()) series.orphan_rows_ = std::max(series.orphan_rows_, dims[0]);
    }
    return series;
  }
  std::vector<std::string> columns = series.group_.get_strings("columns");
  auto step = std::find(columns.begin(), columns.end(), kStep);
  CHECK(!columns.empty() && step != columns.end())
      << series.where() << ": attribute 'columns' " << join_names(columns) << " lacks 'step'";
  series.step_column_ = static_cast<size_t>(step - columns.begin());
  int64_t rows = -1;
  for (const std::string& column : columns) {
    h5::Dataset dataset = series.group_.dataset(column);
    std::vector<int64_t> dims = dataset.dims();
    CHECK(!dims.empty()) << dataset.where() << ": a series column must have a row axis";
    rows = rows < 0 ? dims[0] : std::min(rows, dims[0]);
    series.row_shapes_.emplace_back(dims.begin() + 1, dims.end());
    series.datasets_.push_back(std::move(dataset));
  }
  series.columns_ = std::move(columns);
  series.rows_ = rows;
  if (rows > 0) {
    std::vector<int64_t> steps = series.datasets_[series.step_column_].read<int64_t>();
    series.has_last_step_ = true;
    series.last_step_ = steps[static_cast<size_t>(rows - 1)];
  }
  return series;
}

std::string Series::damage() const {
  if (!interrupted()) return "";
  return group_.path() + ": datasets " + join_names(orphans_) +
         " without the attribute 'columns' (holding at most " + std::to_string(orphan_rows_) +
         (orphan_rows_ == 1 ? " row" : " rows") +
         "): its definition was interrupted before its first row was flushed";
}

std::string Series::drop_interrupted_definition() {
  std::string reason = damage();
  for (const std::string& name : orphans_) group_.remove(name);
  orphans_.clear();
  orphan_rows_ = 0;
  return reason;
}

void Series::define(const std::vector<std::string>& columns,
                    const std::vector<std::vector<int64_t>>& row_shapes) {
  CHECK(!defined()) << where() << ": columns are already defined";
  CHECK(columns.size() == row_shapes.size()) << where() << ": one row shape per column";
  std::set<std::string> distinct(columns.begin(), columns.end());
  CHECK(distinct.size() == columns.size())
      << where() << ": columns " << join_names(columns) << " repeat a name";
  auto step = std::find(columns.begin(), columns.end(), kStep);
  CHECK(step != columns.end()) << where() << ": a row needs a 'step' column, got "
                               << join_names(columns);
  step_column_ = static_cast<size_t>(step - columns.begin());
  CHECK(row_shapes[step_column_].empty()) << where() << ": 'step' holds one number per row";
  for (size_t c = 0; c < columns.size(); ++c) {
    CHECK(!columns[c].empty() && columns[c].find('/') == std::string::npos)
        << where() << ": column name '" << columns[c] << "' must be non-empty without '/'";
    int64_t chunk = chunk_rows(row_shapes[c]);
    datasets_.push_back(c == step_column_
                            ? group_.create_extendable<int64_t>(columns[c], {}, chunk)
                            : group_.create_extendable<double>(columns[c], row_shapes[c], chunk));
  }
  group_.set_strings("columns", columns);
  columns_ = columns;
  row_shapes_ = row_shapes;
  rows_ = 0;
}

void Series::append(const std::vector<const double*>& values) {
  CHECK(defined()) << where() << ": append before the columns are defined";
  CHECK(values.size() == columns_.size())
      << where() << ": " << values.size() << " columns given, the series has " << columns_.size();
  double step_value = *values[step_column_];
  CHECK(std::isfinite(step_value) && step_value == std::floor(step_value) && step_value >= 0 &&
        step_value < 9.0e15)
      << where() << ": step " << step_value << " is not a non-negative integer";
  auto step = static_cast<int64_t>(step_value);
  CHECK(!has_last_step_ || step > last_step_)
      << where() << ": step " << step << " is not after the last row's step " << last_step_;
  try {
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (c == step_column_) {
        datasets_[c].append(&step, 1);
      } else {
        datasets_[c].append(values[c], 1);
      }
    }
  } catch (const Error&) {
    // Cut every column back so that the series stays rectangular; the first error is the one
    // worth reporting.
    for (h5::Dataset& dataset : datasets_) {
      try {
        dataset.resize_rows(rows_);
      } catch (const Error&) {
      }
    }
    throw;
  }
  rows_ += 1;
  has_last_step_ = true;
  last_step_ = step;
}

void Series::keep_steps_up_to(int64_t step) {
  if (!defined()) return;
  std::vector<int64_t> steps = datasets_[step_column_].read<int64_t>();
  int64_t keep = 0;
  while (keep < rows_ && steps[static_cast<size_t>(keep)] <= step) ++keep;
  for (h5::Dataset& dataset : datasets_) {
    if (dataset.rows() != keep) dataset.resize_rows(keep);
  }
  rows_ = keep;
  has_last_step_ = keep > 0;
  last_step_ = keep > 0 ? steps[static_cast<size_t>(keep - 1)] : 0;
}

std::vector<double> Series::read_column(size_t column) const {
  std::vector<double> values = datasets_.at(column).read<double>();
  int64_t row_values = 1;
  for (int64_t extent : row_shapes_[column]) row_values *= extent;
  values.resize(static_cast<size_t>(rows_ * row_values));
  return values;
}

}  // namespace attnlab::io
