// Error construction for the CHECK macros.
#include "core/util/check.h"

#include <cstdlib>

namespace attnlab {

std::string debug_line(const std::exception& error) {
  const auto* ours = dynamic_cast<const Error*>(&error);
  if (ours == nullptr || ours->origin().empty()) return "";
  const char* debug = std::getenv(kDebugEnvironmentVariable);
  if (debug == nullptr || std::string(debug).empty() || std::string(debug) == "0") return "";
  return "debug: " + ours->origin();
}

}  // namespace attnlab

namespace attnlab::detail {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  std::string path(file);
  // Report paths relative to the source tree ("core/ops/linear.cpp"), not the build machine's.
  auto core_at = path.rfind("core/");
  if (core_at != std::string::npos) path = path.substr(core_at);
  where_ = "check " + std::string(condition) + " failed at " + path + ":" + std::to_string(line);
}

CheckFailure::~CheckFailure() noexcept(false) {  // NOLINT(bugprone-exception-escape)
  const std::string text = message_.str();
  // The user's message stays free of source locations; the location goes to origin().
  if (text.empty()) throw Error("internal error: " + where_, where_);
  throw Error(text, where_);
}

}  // namespace attnlab::detail
