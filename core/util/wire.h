// A length-prefixed binary encoding for handing a value from one process to another (the child
// that reads a possibly damaged file, core/util/isolated.h, to its parent): fixed-width
// integers and doubles in this machine's byte order, strings and vectors as a count then their
// bytes. Both ends are the same binary, so there is no versioning; the reader still checks every
// count against the bytes left, so a short or garbled message is an Error, never an over-read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/util/check.h"

namespace attnlab::wire {

class Writer {
 public:
  void put_int(int64_t value) { put_raw(&value, sizeof(value)); }
  void put_double(double value) { put_raw(&value, sizeof(value)); }
  void put_string(const std::string& text) {
    put_int(static_cast<int64_t>(text.size()));
    put_raw(text.data(), text.size());
  }
  void put_doubles(const std::vector<double>& values) {
    put_int(static_cast<int64_t>(values.size()));
    put_raw(values.data(), values.size() * sizeof(double));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void put_raw(const void* data, size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
  }
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  int64_t get_int() {
    int64_t value = 0;
    get_raw(&value, sizeof(value));
    return value;
  }
  double get_double() {
    double value = 0.0;
    get_raw(&value, sizeof(value));
    return value;
  }
  std::string get_string() {
    const size_t size = get_count(1);
    std::string text(bytes_, position_, size);
    position_ += size;
    return text;
  }
  std::vector<double> get_doubles() {
    std::vector<double> values(get_count(sizeof(double)));
    get_raw(values.data(), values.size() * sizeof(double));
    return values;
  }
  // A count of items of `item_size` bytes that the remaining bytes can hold.
  size_t get_count(size_t item_size) {
    const int64_t count = get_int();
    CHECK(count >= 0 && static_cast<uint64_t>(count) <= left() / item_size)
        << "encoded value: a count of " << count << " items with " << left() << " bytes left";
    return static_cast<size_t>(count);
  }
  bool done() const { return position_ == bytes_.size(); }

 private:
  size_t left() const { return bytes_.size() - position_; }
  void get_raw(void* data, size_t size) {
    CHECK(size <= left()) << "encoded value ends after " << bytes_.size() << " bytes, "
                          << size - left() << " short";
    if (size > 0) std::memcpy(data, bytes_.data() + position_, size);
    position_ += size;
  }
  const std::string& bytes_;
  size_t position_ = 0;
};

}  // namespace attnlab::wire
