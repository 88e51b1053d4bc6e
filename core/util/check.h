// Errors: attnlab::Error and the CHECK macros that throw it with file, line and a message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace attnlab {

// Every failure the library reports is an Error; main() prints what() and exits non-zero.
// what() is the text for the user; origin() is where a CHECK fired ("check x > 0 failed at
// core/foo.cpp:12"), for developers: printed on a debug line only (debug_line below).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string origin = "")
      : std::runtime_error(message), origin_(std::move(origin)) {}
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

// Set (to anything but "" or "0") to print where a failed check is in the source.
inline constexpr const char* kDebugEnvironmentVariable = "ATTNLAB_DEBUG";

// "debug: check x > 0 failed at core/foo.cpp:12" for an Error from a CHECK when ATTNLAB_DEBUG is
// set; "" otherwise (other exceptions, or the variable unset).
std::string debug_line(const std::exception& error);

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

// CHECK(x > 0) << "x must be positive, got " << x;  throws attnlab::Error("x must be positive, got
// -1") with origin "check x > 0 failed at core/foo.cpp:12". A CHECK without a message is a bug,
// not a user's mistake: its origin is the message.
#define ATTNLAB_CHECK(condition)                           \
  if (__builtin_expect(static_cast<bool>(condition), 1)) { \
  } else                                                   \
    ::attnlab::detail::CheckFailure(__FILE__, __LINE__, #condition)

#define CHECK(condition) ATTNLAB_CHECK(condition)
