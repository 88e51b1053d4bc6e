// HDF5 datasets: fixed N-D arrays and chunked datasets that grow along axis 0.
#include <hdf5.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/io/h5.h"
#include "core/io/h5_internal.h"
#include "core/util/check.h"

namespace attnlab::h5 {

namespace {

// Memory and file types of each element type; files hold little-endian IEEE / two's complement
// numbers whatever the machine.
template <typename T>
struct TypeOf;
template <>
struct TypeOf<float> {
  static hid_t memory() { return H5T_NATIVE_FLOAT; }
  static hid_t file() { return H5T_IEEE_F32LE; }
};
template <>
struct TypeOf<double> {
  static hid_t memory() { return H5T_NATIVE_DOUBLE; }
  static hid_t file() { return H5T_IEEE_F64LE; }
};
template <>
struct TypeOf<int32_t> {
  static hid_t memory() { return H5T_NATIVE_INT32; }
  static hid_t file() { return H5T_STD_I32LE; }
};
template <>
struct TypeOf<int64_t> {
  static hid_t memory() { return H5T_NATIVE_INT64; }
  static hid_t file() { return H5T_STD_I64LE; }
};

std::vector<hsize_t> to_hsize(const std::vector<int64_t>& dims) {
  return {dims.begin(), dims.end()};
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + ")";
}

int64_t product(const std::vector<int64_t>& dims, size_t from = 0) {
  int64_t count = 1;
  for (size_t i = from; i < dims.size(); ++i) count *= dims[i];
  return count;
}

// A damaged header may claim any extent: 2^40 values of any type are already more than attnlab
// writes, and with every extent below that bound the products below cannot overflow int64 when
// checked one factor at a time.
constexpr int64_t kMaxValues = int64_t{1} << 40;

// True when the dataset's only filter (if any) is the Fletcher-32 checksum, so that its stored
// bytes are at least its values' bytes (a compressing filter would make them fewer).
bool stores_values_uncompressed(hid_t dataset, const std::string& where) {
  Handle properties = own(H5Dget_create_plist(dataset), Kind::property_list, where,
                          "cannot read the dataset's creation properties");
  int filters = H5Pget_nfilters(properties.id());
  check_status(filters < 0 ? -1 : 0, where, "cannot read the dataset's filters");
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    size_t values = 0;
    unsigned filter_config = 0;
    H5Z_filter_t filter = H5Pget_filter2(properties.id(), static_cast<unsigned>(i), &flags, &values,
                                         nullptr, 0, nullptr, &filter_config);
    check_status(filter < 0 ? -1 : 0, where, "cannot read the dataset's filters");
    if (filter != H5Z_FILTER_FLETCHER32) return false;
  }
  return true;
}

Handle simple_space(const std::vector<int64_t>& dims, const std::vector<hsize_t>* max_dims,
                    const std::string& where) {
  if (dims.empty() && max_dims == nullptr) {
    return own(H5Screate(H5S_SCALAR), Kind::dataspace, where, "cannot create a dataspace");
  }
  std::vector<hsize_t> extent = to_hsize(dims);
  return own(H5Screate_simple(static_cast<int>(extent.size()), extent.data(),
                              max_dims != nullptr ? max_dims->data() : nullptr),
             Kind::dataspace, where, "cannot create a dataspace of shape " + shape_text(dims));
}

// Dataset creation properties: no modification times (files of equal content are equal bytes).
Handle creation_properties(const std::string& where) {
  Handle properties = own(H5Pcreate(H5P_DATASET_CREATE), Kind::property_list, where,
                          "cannot create dataset properties");
  check_status(H5Pset_obj_track_times(properties.id(), false), where,
               "cannot switch off time tracking");
  return properties;
}

void set_chunk(const Handle& properties, const std::vector<int64_t>& chunk,
               const std::string& where) {
  std::vector<hsize_t> extent = to_hsize(chunk);
  check_status(H5Pset_chunk(properties.id(), static_cast<int>(extent.size()), extent.data()), where,
               "cannot set chunk shape " + shape_text(chunk));
}

}  // namespace

// ---- Dataset ------------------------------------------------------------------------------

std::vector<int64_t> Dataset::dims() const {
  Handle space =
      own(H5Dget_space(handle_.id()), Kind::dataspace, where(), "cannot read the dataspace");
  int rank = H5Sget_simple_extent_ndims(space.id());
  check_status(rank < 0 ? -1 : 0, where(), "cannot read the rank");
  std::vector<hsize_t> extent(static_cast<size_t>(rank));
  check_status(H5Sget_simple_extent_dims(space.id(), extent.data(), nullptr), where(),
               "cannot read the shape");
  // Checked one factor at a time against 2^40, so that no product below overflows int64.
  std::vector<int64_t> shape;
  hsize_t values = 1;
  for (hsize_t length : extent) {
    const auto limit = static_cast<hsize_t>(kMaxValues);
    CHECK(length <= limit && (length == 0 || values <= limit / length))
        << where() << ": the file claims a shape with more than 2^40 values (a damaged file)";
    values *= length == 0 ? 1 : length;
    shape.push_back(static_cast<int64_t>(length));
  }
  return shape;
}

int64_t Dataset::stored_value_count() const {
  const std::vector<int64_t> extent = dims();
  const int64_t count = product(extent);
  if (count == 0 || !stores_values_uncompressed(handle_.id(), where())) return count;
  Handle type = own(H5Dget_type(handle_.id()), Kind::datatype, where(), "cannot read the type");
  const auto value_bytes = static_cast<int64_t>(H5Tget_size(type.id()));
  check_status(value_bytes <= 0 ? -1 : 0, where(), "cannot read the size of a value");
  // Chunks and contiguous storage are allocated when written, so an intact dataset stores at
  // least all of its values; a header that claims more than that is damaged.
  const auto stored_bytes = static_cast<int64_t>(H5Dget_storage_size(handle_.id()));
  CHECK(count <= stored_bytes / value_bytes)
      << where() << ": claims " << count << " values of shape " << shape_text(extent) << " ("
      << count * value_bytes << " bytes) but the file stores " << stored_bytes
      << " bytes for it (a damaged file)";
  return count;
}

int64_t Dataset::rows() const {
  std::vector<int64_t> extent = dims();
  return extent.empty() ? 1 : extent[0];
}

ValueType Dataset::value_type() const {
  Handle type = own(H5Dget_type(handle_.id()), Kind::datatype, where(), "cannot read the type");
  return value_type_of(type.id());
}

template <typename T>
void Dataset::read_into(T* out, int64_t count) const {
  ValueType type = value_type();
  CHECK(type == ValueType::integer || type == ValueType::floating)
      << where() << ": holds " << value_type_name(type) << ", expected numbers";
  const int64_t stored = stored_value_count();
  CHECK(stored == count) << where() << ": holds " << stored << " values of shape "
                         << shape_text(dims()) << ", the reader expects " << count;
  if (count == 0) return;
  check_status(H5Dread(handle_.id(), TypeOf<T>::memory(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out),
               where(), "cannot read the values");
}

template <typename T>
std::vector<T> Dataset::read() const {
  std::vector<T> values(static_cast<size_t>(stored_value_count()));
  read_into(values.data(), static_cast<int64_t>(values.size()));
  return values;
}

namespace {

// The current extent, checked to be a dataset created by create_extendable.
std::vector<int64_t> extendable_dims(hid_t dataset, const std::string& where) {
  Handle space = own(H5Dget_space(dataset), Kind::dataspace, where, "cannot read the dataspace");
  int rank = H5Sget_simple_extent_ndims(space.id());
  check_status(rank < 0 ? -1 : 0, where, "cannot read the rank");
  std::vector<hsize_t> extent(static_cast<size_t>(rank));
  std::vector<hsize_t> max_extent(static_cast<size_t>(rank));
  check_status(H5Sget_simple_extent_dims(space.id(), extent.data(), max_extent.data()), where,
               "cannot read the shape");
  CHECK(rank >= 1 && max_extent[0] == H5S_UNLIMITED)
      << where << ": is a fixed-size dataset; only extendable datasets take rows";
  return {extent.begin(), extent.end()};
}

}  // namespace

template <typename T>
void Dataset::append(const T* values, int64_t count) {
  CHECK(count >= 0) << where() << ": cannot append " << count << " rows";
  std::vector<int64_t> extent = extendable_dims(handle_.id(), where());
  if (count == 0) return;
  int64_t old_rows = extent[0];
  extent[0] += count;
  std::vector<hsize_t> new_extent = to_hsize(extent);
  check_status(H5Dset_extent(handle_.id(), new_extent.data()), where(),
               "cannot extend to " + std::to_string(extent[0]) + " rows");
  Handle file_space =
      own(H5Dget_space(handle_.id()), Kind::dataspace, where(), "cannot read the dataspace");
  std::vector<hsize_t> start(extent.size(), 0);
  start[0] = static_cast<hsize_t>(old_rows);
  std::vector<int64_t> block = extent;
  block[0] = count;
  std::vector<hsize_t> block_extent = to_hsize(block);
  check_status(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start.data(), nullptr,
                                   block_extent.data(), nullptr),
               where(), "cannot select the new rows");
  Handle memory_space = simple_space(block, nullptr, where());
  check_status(H5Dwrite(handle_.id(), TypeOf<T>::memory(), memory_space.id(), file_space.id(),
                        H5P_DEFAULT, values),
               where(), "cannot write " + std::to_string(count) + " rows");
}

void Dataset::resize_rows(int64_t rows) {
  CHECK(rows >= 0) << where() << ": cannot resize to " << rows << " rows";
  std::vector<int64_t> extent = extendable_dims(handle_.id(), where());
  if (rows > extent[0]) {
    // Zeros are written, not left to HDF5's fill value, so that the new rows are stored bytes
    // like every other row (stored_value_count relies on it).
    std::vector<double> zeros(static_cast<size_t>((rows - extent[0]) * product(extent, 1)), 0.0);
    append(zeros.data(), rows - extent[0]);
    return;
  }
  extent[0] = rows;
  std::vector<hsize_t> new_extent = to_hsize(extent);
  check_status(H5Dset_extent(handle_.id(), new_extent.data()), where(),
               "cannot resize to " + std::to_string(rows) + " rows");
}

// ---- Group: datasets ----------------------------------------------------------------------

template <typename T>
Dataset Group::write(const std::string& name, const std::vector<int64_t>& dims, const T* values,
                     const WriteOptions& options) {
  for (int64_t extent : dims) {
    CHECK(extent >= 0) << where(name) << ": negative extent in shape " << shape_text(dims);
  }
  Handle space = simple_space(dims, nullptr, where(name));
  Handle properties = creation_properties(where(name));
  int64_t count = product(dims);
  if (options.checksum && !dims.empty() && count > 0) {
    // One chunk holds the whole array; HDF5 limits a chunk to 4 GiB.
    CHECK(count * static_cast<int64_t>(sizeof(T)) < std::numeric_limits<uint32_t>::max())
        << where(name) << ": array of shape " << shape_text(dims)
        << " exceeds the 4 GiB a checksummed chunk can hold";
    set_chunk(properties, dims, where(name));
    check_status(H5Pset_fletcher32(properties.id()), where(name), "cannot enable the checksum");
  }
  Handle dataset = own(H5Dcreate2(handle_.id(), name.c_str(), TypeOf<T>::file(), space.id(),
                                  H5P_DEFAULT, properties.id(), H5P_DEFAULT),
                       Kind::dataset, where(name), "cannot create dataset");
  if (count > 0) {
    check_status(H5Dwrite(dataset.id(), TypeOf<T>::memory(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
                 where(name), "cannot write the values");
  }
  return Dataset(std::move(dataset), file_path_, child_path(name));
}

template <typename T>
Array<T> Group::read(const std::string& name) const {
  Dataset data = dataset(name);
  return Array<T>{data.dims(), data.read<T>()};
}

template <typename T>
Dataset Group::create_extendable(const std::string& name, const std::vector<int64_t>& row_dims,
                                 int64_t chunk_rows) {
  CHECK(chunk_rows > 0) << where(name) << ": chunk of " << chunk_rows << " rows";
  for (int64_t extent : row_dims) {
    CHECK(extent > 0) << where(name) << ": row shape " << shape_text(row_dims)
                      << " must have positive extents";
  }
  std::vector<int64_t> dims = {0};
  dims.insert(dims.end(), row_dims.begin(), row_dims.end());
  std::vector<hsize_t> max_dims = to_hsize(dims);
  max_dims[0] = H5S_UNLIMITED;
  Handle space = simple_space(dims, &max_dims, where(name));
  Handle properties = creation_properties(where(name));
  std::vector<int64_t> chunk = dims;
  chunk[0] = chunk_rows;
  set_chunk(properties, chunk, where(name));
  Handle dataset = own(H5Dcreate2(handle_.id(), name.c_str(), TypeOf<T>::file(), space.id(),
                                  H5P_DEFAULT, properties.id(), H5P_DEFAULT),
                       Kind::dataset, where(name), "cannot create dataset");
  return Dataset(std::move(dataset), file_path_, child_path(name));
}

// NOLINTBEGIN(bugprone-macro-parentheses): T is a type name, which parentheses would break.
#define ATTNLAB_H5_INSTANTIATE(T)                                                               \
  template std::vector<T> Dataset::read<T>() const;                                             \
  template void Dataset::read_into<T>(T*, int64_t) const;                                       \
  template void Dataset::append<T>(const T*, int64_t);                                          \
  template Dataset Group::write<T>(const std::string&, const std::vector<int64_t>&, const T*,   \
                                   const WriteOptions&);                                        \
  template Array<T> Group::read<T>(const std::string&) const;                                   \
  template Dataset Group::create_extendable<T>(const std::string&, const std::vector<int64_t>&, \
                                               int64_t);

ATTNLAB_H5_INSTANTIATE(float)
ATTNLAB_H5_INSTANTIATE(double)
ATTNLAB_H5_INSTANTIATE(int32_t)
ATTNLAB_H5_INSTANTIATE(int64_t)

#undef ATTNLAB_H5_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace attnlab::h5
