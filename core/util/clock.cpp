#include "core/util/clock.h"

#include <ctime>

namespace attnlab {
namespace {

// Now, broken down in UTC or in the local time zone, as strftime's `format` writes it.
std::string format_now(bool utc, const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  if (utc) {
    gmtime_r(&now, &parts);
  } else {
    localtime_r(&now, &parts);
  }
  char text[32];
  std::strftime(text, sizeof(text), format, &parts);
  return text;
}

}  // namespace

std::string utc_now() { return format_now(true, "%Y-%m-%dT%H:%M:%SZ"); }

std::string local_time_of_day() { return format_now(false, "%H:%M:%S"); }

}  // namespace attnlab
