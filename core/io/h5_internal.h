// Shared by the core/io sources (not part of the public API): HDF5 error text and checked calls.
// Types are spelled as int64_t (hid_t) and int (herr_t) so that this header needs no hdf5.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/io/h5.h"

namespace attnlab::h5 {

// Switches off HDF5's printing of its error stack to stderr (once per process).
void silence_error_printing();
// " (HDF5: <top message>: <deepest message>)" from HDF5's error stack, which it then clears;
// empty if the stack is empty.
std::string take_error_stack();
// Owns `id`, or throws "<where>: <what> (HDF5: ...)" if the call that returned it failed (id < 0).
Handle own(int64_t id, Kind kind, const std::string& where, const std::string& what);
// Throws "<where>: <what> (HDF5: ...)" if `status` < 0.
void check_status(int status, const std::string& where, const std::string& what);
// A variable-length UTF-8 string type.
Handle string_type();
ValueType value_type_of(int64_t type);
// "an integer", "a string", ... for messages.
const char* value_type_name(ValueType type);

}  // namespace attnlab::h5
