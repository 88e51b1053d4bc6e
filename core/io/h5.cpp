// HDF5 handles, files, groups and attributes (datasets are in h5_dataset.cpp).
#include "core/io/h5.h"

#include <hdf5.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/io/h5_internal.h"
#include "core/util/check.h"

static_assert(std::is_same_v<hid_t, int64_t>, "h5.h carries hid_t as int64_t");

namespace attnlab::h5 {

// ---- errors -------------------------------------------------------------------------------

namespace {

struct StackText {
  std::string top;
  std::string deepest;
};

herr_t collect_error(unsigned n, const H5E_error2_t* error, void* data) {
  auto* text = static_cast<StackText*>(data);
  std::string description = error->desc != nullptr ? error->desc : "";
  if (n == 0) text->top = description;
  text->deepest = description;
  return 0;
}

}  // namespace

void silence_error_printing() {
  static const bool silenced = [] {
    // No library shutdown at exit: every file is closed by its handle's destructor before then,
    // and after a failed write (a full disk) HDF5's exit handler would close that file again and
    // crash in H5F__close_cb, turning a clear error (exit 1) into a segfault (139). Must come
    // before the first call that initialises the library (it fails harmlessly after it).
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

std::string take_error_stack() {
  StackText text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &text);
  H5Eclear2(H5E_DEFAULT);
  if (text.top.empty()) return "";
  if (text.deepest.empty() || text.deepest == text.top) return " (HDF5: " + text.top + ")";
  return " (HDF5: " + text.top + ": " + text.deepest + ")";
}

// ---- handles ------------------------------------------------------------------------------

Handle::~Handle() { release(); }

Handle::Handle(Handle&& other) noexcept : id_(other.id_), kind_(other.kind_) { other.id_ = -1; }

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    release();
    id_ = other.id_;
    kind_ = other.kind_;
    other.id_ = -1;
  }
  return *this;
}

// A failed close cannot be reported from a destructor; HDF5 only fails it for invalid ids, which
// this class never holds.
void Handle::release() noexcept {
  if (id_ < 0) return;
  switch (kind_) {
    case Kind::file: H5Fclose(id_); break;
    case Kind::group: H5Gclose(id_); break;
    case Kind::dataset: H5Dclose(id_); break;
    case Kind::attribute: H5Aclose(id_); break;
    case Kind::dataspace: H5Sclose(id_); break;
    case Kind::datatype: H5Tclose(id_); break;
    case Kind::property_list: H5Pclose(id_); break;
    case Kind::object: H5Oclose(id_); break;
  }
  id_ = -1;
}

Handle own(int64_t id, Kind kind, const std::string& where, const std::string& what) {
  // A direct throw: the HDF5 reason already says what failed, a "[check ...]" suffix would not.
  if (id < 0) throw Error(where + ": " + what + take_error_stack());
  return Handle(id, kind);
}

void check_status(int status, const std::string& where, const std::string& what) {
  if (status < 0) throw Error(where + ": " + what + take_error_stack());
}

Handle string_type() {
  Handle type(H5Tcopy(H5T_C_S1), Kind::datatype);
  CHECK(type.valid()) << "HDF5: cannot create a string type" << take_error_stack();
  CHECK(H5Tset_size(type.id(), H5T_VARIABLE) >= 0 && H5Tset_cset(type.id(), H5T_CSET_UTF8) >= 0)
      << "HDF5: cannot make a variable-length UTF-8 string type" << take_error_stack();
  return type;
}

ValueType value_type_of(int64_t type) {
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return ValueType::integer;
    case H5T_FLOAT: return ValueType::floating;
    case H5T_STRING: return ValueType::string;
    default: return ValueType::other;
  }
}

const char* value_type_name(ValueType type) {
  switch (type) {
    case ValueType::integer: return "an integer";
    case ValueType::floating: return "a floating-point number";
    case ValueType::string: return "a string";
    case ValueType::other: break;
  }
  return "of an unsupported type";
}

// ---- objects and attributes ---------------------------------------------------------------

Object::Object(Handle handle, std::string file_path, std::string path)
    : handle_(std::move(handle)), file_path_(std::move(file_path)), path_(std::move(path)) {}

std::string Object::where() const { return file_path_ + ", " + path_; }

std::string Object::where(const std::string& child) const {
  return file_path_ + ", " + child_path(child);
}

std::string Object::child_path(const std::string& name) const {
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

bool Object::has_attribute(const std::string& name) const {
  htri_t exists = H5Aexists(handle_.id(), name.c_str());
  check_status(exists < 0 ? -1 : 0, where(), "cannot look up attribute '" + name + "'");
  return exists > 0;
}

namespace {

herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> Object::attribute_names() const {
  std::vector<std::string> names;
  hsize_t index = 0;
  check_status(
      H5Aiterate2(handle_.id(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_attribute_name, &names),
      where(), "cannot list attributes");
  return names;
}

namespace {

// Opens attribute `name` of `object`, with an Error naming it when it is missing.
Handle open_attribute(hid_t object, const std::string& name, const std::string& where) {
  htri_t exists = H5Aexists(object, name.c_str());
  check_status(exists < 0 ? -1 : 0, where, "cannot look up attribute '" + name + "'");
  CHECK(exists > 0) << where << ": has no attribute '" << name << "'";
  return own(H5Aopen(object, name.c_str(), H5P_DEFAULT), Kind::attribute, where,
             "cannot open attribute '" + name + "'");
}

// Replaces attribute `name` by a new one of `type` over `space`, and writes `data` to it.
void write_attribute(hid_t object, const std::string& name, hid_t type, hid_t space,
                     const void* data, const std::string& where) {
  htri_t exists = H5Aexists(object, name.c_str());
  check_status(exists < 0 ? -1 : 0, where, "cannot look up attribute '" + name + "'");
  if (exists > 0) {
    check_status(H5Adelete(object, name.c_str()), where, "cannot replace attribute '" + name + "'");
  }
  Handle attribute = own(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                         Kind::attribute, where, "cannot create attribute '" + name + "'");
  check_status(H5Awrite(attribute.id(), type, data), where,
               "cannot write attribute '" + name + "'");
}

Handle scalar_space(const std::string& where) {
  return own(H5Screate(H5S_SCALAR), Kind::dataspace, where, "cannot create a dataspace");
}

Handle stored_type(const Handle& attribute, const std::string& where) {
  return own(H5Aget_type(attribute.id()), Kind::datatype, where, "cannot read attribute type");
}

// Element count of an attribute's dataspace (1 for a scalar).
int64_t attribute_size(const Handle& attribute, const std::string& where) {
  Handle space =
      own(H5Aget_space(attribute.id()), Kind::dataspace, where, "cannot read attribute dataspace");
  hssize_t count = H5Sget_simple_extent_npoints(space.id());
  check_status(count < 0 ? -1 : 0, where, "cannot read attribute size");
  return count;
}

// Reads a string attribute of `count` elements, variable or fixed length.
std::vector<std::string> read_string_attribute(const Handle& attribute, const std::string& name,
                                               const std::string& where) {
  Handle stored = stored_type(attribute, where);
  ValueType type = value_type_of(stored.id());
  CHECK(type == ValueType::string) << where << ": attribute '" << name << "' is "
                                   << value_type_name(type) << ", expected a string";
  auto count = static_cast<size_t>(attribute_size(attribute, where));
  std::vector<std::string> values;
  htri_t variable = H5Tis_variable_str(stored.id());
  check_status(variable < 0 ? -1 : 0, where, "cannot inspect string attribute '" + name + "'");
  if (variable > 0) {
    Handle memory = string_type();
    std::vector<char*> pointers(count, nullptr);
    check_status(H5Aread(attribute.id(), memory.id(), pointers.data()), where,
                 "cannot read attribute '" + name + "'");
    for (char* text : pointers) {
      values.emplace_back(text != nullptr ? text : "");
    }
    Handle space = own(H5Aget_space(attribute.id()), Kind::dataspace, where,
                       "cannot read attribute dataspace");
    H5Dvlen_reclaim(memory.id(), space.id(), H5P_DEFAULT, pointers.data());
  } else {
    size_t width = H5Tget_size(stored.id());
    CHECK(width > 0) << where << ": cannot read the width of string attribute '" << name << "'"
                     << take_error_stack();
    std::vector<char> buffer(width * count);
    check_status(H5Aread(attribute.id(), stored.id(), buffer.data()), where,
                 "cannot read attribute '" + name + "'");
    for (size_t i = 0; i < count; ++i) {
      const char* begin = buffer.data() + i * width;
      values.emplace_back(begin, strnlen(begin, width));
    }
  }
  return values;
}

template <typename T>
T read_number_attribute(hid_t object, const std::string& name, hid_t memory_type,
                        const std::string& where) {
  Handle attribute = open_attribute(object, name, where);
  ValueType type = value_type_of(stored_type(attribute, where).id());
  CHECK(type == ValueType::integer || type == ValueType::floating)
      << where << ": attribute '" << name << "' is " << value_type_name(type)
      << ", expected a number";
  CHECK(attribute_size(attribute, where) == 1)
      << where << ": attribute '" << name << "' holds several values, expected one";
  T value{};
  check_status(H5Aread(attribute.id(), memory_type, &value), where,
               "cannot read attribute '" + name + "'");
  return value;
}

}  // namespace

ValueType Object::attribute_type(const std::string& name) const {
  Handle attribute = open_attribute(handle_.id(), name, where());
  return value_type_of(stored_type(attribute, where()).id());
}

void Object::set_int(const std::string& name, int64_t value) {
  Handle space = scalar_space(where());
  write_attribute(handle_.id(), name, H5T_NATIVE_INT64, space.id(), &value, where());
}

void Object::set_double(const std::string& name, double value) {
  Handle space = scalar_space(where());
  write_attribute(handle_.id(), name, H5T_NATIVE_DOUBLE, space.id(), &value, where());
}

void Object::set_string(const std::string& name, const std::string& value) {
  Handle space = scalar_space(where());
  Handle type = string_type();
  const char* text = value.c_str();
  write_attribute(handle_.id(), name, type.id(), space.id(), &text, where());
}

void Object::set_strings(const std::string& name, const std::vector<std::string>& values) {
  hsize_t count = values.size();
  Handle space = own(H5Screate_simple(1, &count, nullptr), Kind::dataspace, where(),
                     "cannot create a dataspace");
  Handle type = string_type();
  std::vector<const char*> texts;
  texts.reserve(values.size());
  for (const std::string& value : values) texts.push_back(value.c_str());
  write_attribute(handle_.id(), name, type.id(), space.id(), texts.data(), where());
}

int64_t Object::get_int(const std::string& name) const {
  return read_number_attribute<int64_t>(handle_.id(), name, H5T_NATIVE_INT64, where());
}

double Object::get_double(const std::string& name) const {
  return read_number_attribute<double>(handle_.id(), name, H5T_NATIVE_DOUBLE, where());
}

std::string Object::get_string(const std::string& name) const {
  Handle attribute = open_attribute(handle_.id(), name, where());
  std::vector<std::string> values = read_string_attribute(attribute, name, where());
  CHECK(values.size() == 1) << where() << ": attribute '" << name << "' holds " << values.size()
                            << " strings, expected one";
  return values[0];
}

std::vector<std::string> Object::get_strings(const std::string& name) const {
  Handle attribute = open_attribute(handle_.id(), name, where());
  return read_string_attribute(attribute, name, where());
}

// ---- groups -------------------------------------------------------------------------------

bool Group::has(const std::string& name) const {
  htri_t exists = H5Lexists(handle_.id(), name.c_str(), H5P_DEFAULT);
  check_status(exists < 0 ? -1 : 0, where(), "cannot look up '" + name + "'");
  return exists > 0;
}

namespace {

// H5I_GROUP, H5I_DATASET, ... for the object at `name`.
H5I_type_t object_type(hid_t group, const std::string& name, const std::string& where) {
  Handle object = own(H5Oopen(group, name.c_str(), H5P_DEFAULT), Kind::object, where,
                      "cannot open '" + name + "'");
  return H5Iget_type(object.id());
}

herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

bool Group::has_group(const std::string& name) const {
  return has(name) && object_type(handle_.id(), name, where()) == H5I_GROUP;
}

bool Group::has_dataset(const std::string& name) const {
  return has(name) && object_type(handle_.id(), name, where()) == H5I_DATASET;
}

std::vector<std::string> Group::names() const {
  std::vector<std::string> names;
  hsize_t index = 0;
  check_status(
      H5Literate(handle_.id(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_link_name, &names),
      where(), "cannot list the group");
  return names;
}

Group Group::group(const std::string& name) const {
  CHECK(has_group(name)) << where() << ": has no group '" << name << "'";
  Handle handle = own(H5Gopen2(handle_.id(), name.c_str(), H5P_DEFAULT), Kind::group, where(name),
                      "cannot open group");
  return Group(std::move(handle), file_path_, child_path(name));
}

Group Group::create_group(const std::string& name) {
  Handle handle = own(H5Gcreate2(handle_.id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      Kind::group, where(name), "cannot create group");
  return Group(std::move(handle), file_path_, child_path(name));
}

Group Group::require_group(const std::string& name) {
  return has(name) ? group(name) : create_group(name);
}

Dataset Group::dataset(const std::string& name) const {
  CHECK(has_dataset(name)) << where() << ": has no dataset '" << name << "'";
  Handle handle = own(H5Dopen2(handle_.id(), name.c_str(), H5P_DEFAULT), Kind::dataset, where(name),
                      "cannot open dataset");
  return Dataset(std::move(handle), file_path_, child_path(name));
}

void Group::remove(const std::string& name) {
  check_status(H5Ldelete(handle_.id(), name.c_str(), H5P_DEFAULT), where(name), "cannot delete");
}

// ---- files --------------------------------------------------------------------------------

namespace {

Handle file_access(const std::string& path, bool locking) {
  Handle access = own(H5Pcreate(H5P_FILE_ACCESS), Kind::property_list, path,
                      "cannot create file access properties");
  // The oldest file format: no "open for writing" flag in the superblock, so a file left by a
  // killed writer opens in h5py and h5dump without h5clear.
  check_status(H5Pset_libver_bounds(access.id(), H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST), path,
               "cannot set file format bounds");
  if (!locking) {
    check_status(H5Pset_file_locking(access.id(), false, true), path,
                 "cannot disable file locking");
  }
  return access;
}

bool file_exists(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  std::fclose(file);
  return true;
}

}  // namespace

File File::create_with(const std::string& path, bool overwrite, bool locking) {
  silence_error_printing();
  CHECK(overwrite || !file_exists(path)) << path << ": file exists; refusing to overwrite it";
  Handle access = file_access(path, locking);
  hid_t id =
      H5Fcreate(path.c_str(), overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, access.id());
  return File(own(id, Kind::file, path, "cannot create the file"), path);
}

File File::open_with(const std::string& path, Access mode, bool locking) {
  silence_error_printing();
  CHECK(file_exists(path)) << path << ": no such file (or it cannot be read)";
  CHECK(File::is_hdf5(path)) << path << ": not an HDF5 file";
  Handle access = file_access(path, locking);
  unsigned flags = mode == Access::write ? H5F_ACC_RDWR : H5F_ACC_RDONLY;
  hid_t id = H5Fopen(path.c_str(), flags, access.id());
  return File(
      own(id, Kind::file, path,
          mode == Access::write ? "cannot open the file for writing" : "cannot open the file"),
      path);
}

File::File(Handle handle, std::string path)
    : handle_(std::move(handle)),
      path_(std::move(path)),
      root_(own(H5Gopen2(handle_.id(), "/", H5P_DEFAULT), Kind::group, path_,
                "cannot open the root group"),
            path_, "/") {}

File File::create(const std::string& path, bool overwrite) {
  return create_with(path, overwrite, true);
}

File File::create_unlocked(const std::string& path) { return create_with(path, false, false); }

File File::open(const std::string& path, Access access) { return open_with(path, access, true); }

File File::open_unlocked(const std::string& path, Access access) {
  return open_with(path, access, false);
}

void File::flush() {
  check_status(H5Fflush(handle_.id(), H5F_SCOPE_GLOBAL), path_, "cannot flush the file");
}

bool File::is_hdf5(const std::string& path) {
  silence_error_printing();
  htri_t result = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return result > 0;
}

}  // namespace attnlab::h5
