#include "core/util/fault.h"

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace attnlab {

void fault_point(const char* stage) {
  static const char* const chosen = std::getenv("ATTNLAB_FAULT_AT");
  if (chosen != nullptr && std::strcmp(chosen, stage) == 0) std::raise(SIGKILL);
}

}  // namespace attnlab
