// Error construction for the CHECK macros.
#include "core/util/check.h"

namespace attnlab::detail {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  std::string path(file);
  // Report paths relative to the source tree ("core/ops/linear.cpp"), not the build machine's.
  auto core_at = path.rfind("core/");
  if (core_at != std::string::npos) path = path.substr(core_at);
  where_ =
      " [check " + std::string(condition) + " failed at " + path + ":" + std::to_string(line) + "]";
}

CheckFailure::~CheckFailure() noexcept(false) {  // NOLINT(bugprone-exception-escape)
  std::string text = message_.str();
  if (text.empty()) text = "internal check failed";
  throw Error(text + where_);
}

}  // namespace attnlab::detail
