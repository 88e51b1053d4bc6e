// EXPECT that a statement throws attnlab::Error with a message holding given parts.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/util/check.h"

namespace attnlab::test {

// Runs `body`, expecting an Error whose message holds every one of `parts`.
template <typename Body>
void expect_error(Body body, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "no error thrown; expected one mentioning '" << parts.front() << "'";
  } catch (const Error& error) {
    std::string message = error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message lacks '" << part << "': " << message;
    }
  }
}

}  // namespace attnlab::test
