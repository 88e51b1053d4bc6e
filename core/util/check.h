// Errors: attnlab::Error and the CHECK macros that throw it with file, line and a message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace attnlab {

// Every failure the library reports is an Error; main() prints what() and exits non-zero.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {

// Collects `CHECK(cond) << "what" << value` text and throws when the statement ends.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  // Throwing when the CHECK statement ends is how the message reaches the caller.
  [[noreturn]] ~CheckFailure() noexcept(false);  // NOLINT(bugprone-exception-escape)

  template <typename Value>
  CheckFailure& operator<<(const Value& value) {
    message_ << value;
    return *this;
  }

 private:
  std::ostringstream message_;
  std::string where_;
};

}  // namespace detail
}  // namespace attnlab

// CHECK(x > 0) << "x must be positive, got " << x;  throws
// attnlab::Error("x must be positive, got -1 [check x > 0 failed at core/foo.cpp:12]").
#define ATTNLAB_CHECK(condition)                           \
  if (__builtin_expect(static_cast<bool>(condition), 1)) { \
  } else                                                   \
    ::attnlab::detail::CheckFailure(__FILE__, __LINE__, #condition)

#define CHECK(condition) ATTNLAB_CHECK(condition)
