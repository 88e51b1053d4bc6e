// HDF5 as owning C++ objects: files, groups, datasets and their attributes, typed reads and
// writes of scalars, strings and N-D arrays, and chunked datasets that grow along axis 0.
//
// Every failure throws attnlab::Error naming the file, the object path and HDF5's own reason:
//   "run.h5, /train/loss: cannot extend dataset to 12 rows (... reason ...)".
// HDF5's automatic printing of its error stack to stderr is switched off the first time a file is
// opened; the stack's text goes into the Error instead. Only core/io/*.cpp include hdf5.h, so this
// header carries handles as plain int64_t (hid_t in HDF5 >= 1.10, checked by a static_assert).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::h5 {

// What an HDF5 identifier refers to; decides which H5*close releases it (object: H5Oopen).
enum class Kind { file, group, dataset, attribute, dataspace, datatype, property_list, object };

// One owned HDF5 identifier, closed exactly once by its destructor. Move-only.
class Handle {
 public:
  Handle() = default;
  Handle(int64_t id, Kind kind) : id_(id), kind_(kind) {}
  ~Handle();
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  int64_t id() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  void release() noexcept;
  int64_t id_ = -1;
  Kind kind_ = Kind::file;
};

// The type family of a stored attribute or dataset.
enum class ValueType { integer, floating, string, other };

// A whole N-D array read back: row-major values and their dimensions.
template <typename T>
struct Array {
  std::vector<int64_t> dims;
  std::vector<T> values;
};

// A group or dataset: a named object in a file that carries attributes. Attribute writes replace
// an existing attribute of the same name. Numbers read from an attribute of another numeric type
// are converted by HDF5; reading a number as a string (or the reverse) is an Error.
class Object {
 public:
  const std::string& file_path() const { return file_path_; }
  // Absolute path inside the file, "/train/loss".
  const std::string& path() const { return path_; }
  // "<file>, <object path>", the prefix of error messages about this object.
  std::string where() const;

  bool has_attribute(const std::string& name) const;
  // Attribute names in alphabetical order.
  std::vector<std::string> attribute_names() const;
  ValueType attribute_type(const std::string& name) const;

  void set_int(const std::string& name, int64_t value);
  void set_double(const std::string& name, double value);
  // UTF-8, variable length (no size limit; h5py reads it as str).
  void set_string(const std::string& name, const std::string& value);
  // A 1-D array of variable-length UTF-8 strings (h5py: an array of str).
  void set_strings(const std::string& name, const std::vector<std::string>& values);

  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  // Reads variable- and fixed-length string attributes alike.
  std::string get_string(const std::string& name) const;
  std::vector<std::string> get_strings(const std::string& name) const;

 protected:
  Object(Handle handle, std::string file_path, std::string path);
  std::string where(const std::string& child) const;
  std::string child_path(const std::string& name) const;

  Handle handle_;
  std::string file_path_;
  std::string path_;
};

// A dataset of numbers: fixed, or extendable along axis 0. The templates below take float, double,
// int32_t and int64_t.
class Dataset : public Object {
 public:
  // The shape; an Error when the file claims more than 2^40 values (a damaged header).
  std::vector<int64_t> dims() const;
  // The number of values, checked against the bytes the file stores for the dataset, so that a
  // damaged header claiming billions of rows is an Error, not an allocation of what it claims.
  int64_t stored_value_count() const;
  // Extent along axis 0 (1 for a scalar).
  int64_t rows() const;
  ValueType value_type() const;
  // Every value, row-major, converted to T by HDF5.
  template <typename T>
  std::vector<T> read() const;
  // Reads every value into `out`, which holds exactly `count` values (an Error otherwise).
  template <typename T>
  void read_into(T* out, int64_t count) const;
  // Appends `count` rows (count * row size values, row-major) at the end of an extendable
  // dataset.
  template <typename T>
  void append(const T* values, int64_t count);
  // Sets the extent along axis 0 of an extendable dataset: truncates, or grows with zeros.
  void resize_rows(int64_t rows);

 private:
  friend class Group;
  using Object::Object;
};

// Options of fixed datasets.
struct WriteOptions {
  // Stores the array as one chunk with a Fletcher-32 checksum: a read of damaged bytes fails
  // instead of returning wrong numbers (used for checkpoints).
  bool checksum = false;
};

class Group : public Object {
 public:
  bool has(const std::string& name) const;
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  // Names of the links in this group, alphabetical.
  std::vector<std::string> names() const;

  Group group(const std::string& name) const;
  Group create_group(const std::string& name);
  // Opens the group, creating it if it does not exist.
  Group require_group(const std::string& name);
  Dataset dataset(const std::string& name) const;
  // Deletes the link `name` (its space is reused by later writes, not returned to the OS).
  void remove(const std::string& name);

  // A fixed-size dataset of `dims` (empty: a scalar) holding `values` row-major.
  template <typename T>
  Dataset write(const std::string& name, const std::vector<int64_t>& dims, const T* values,
                const WriteOptions& options = {});
  template <typename T>
  Dataset write(const std::string& name, const std::vector<T>& values) {
    return write<T>(name, {static_cast<int64_t>(values.size())}, values.data());
  }
  template <typename T>
  Array<T> read(const std::string& name) const;
  // An empty dataset of shape (0, row_dims...) that grows along axis 0 without limit, stored in
  // chunks of `chunk_rows` rows.
  template <typename T>
  Dataset create_extendable(const std::string& name, const std::vector<int64_t>& row_dims,
                            int64_t chunk_rows);

 private:
  friend class File;
  using Object::Object;
};

// How an existing file is opened.
enum class Access { read, write };

// A file and its root group. HDF5 keeps the file open until the File and every Group, Dataset
// opened from it are destroyed.
class File {
 public:
  // Creates `path`; an existing file is an Error unless `overwrite`.
  static File create(const std::string& path, bool overwrite = false);
  // Opens an existing HDF5 file. A missing file, or one that is not HDF5, is an Error naming it.
  static File open(const std::string& path, Access access);
  // The same, without taking HDF5's advisory file lock: readers may open the file while a writer
  // holds it, and a writer opened this way does not stop them (run logs are read while running).
  static File open_unlocked(const std::string& path, Access access);
  static File create_unlocked(const std::string& path);

  const std::string& path() const { return path_; }
  Group& root() { return root_; }
  const Group& root() const { return root_; }
  // Writes every buffer and metadata HDF5 holds for the file to the operating system, so that a
  // process killed afterwards leaves a readable file with everything written so far.
  void flush();
  // True if `path` starts with the HDF5 signature (cheap; no HDF5 error if it does not).
  static bool is_hdf5(const std::string& path);

 private:
  File(Handle handle, std::string path);
  static File create_with(const std::string& path, bool overwrite, bool locking);
  static File open_with(const std::string& path, Access mode, bool locking);
  Handle handle_;
  std::string path_;
  Group root_;
};

}  // namespace attnlab::h5
