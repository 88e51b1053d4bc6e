// JSON text of the commands that print JSON (bleu, inspect): strings and numbers.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace attnlab::cli {

// A JSON string: quotes and backslashes escaped, control characters as \u00XX; UTF-8 passes as is.
inline std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (byte < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", byte);
      out += escaped;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// A double that reads back to the same value. JSON has no inf or nan: those become null.
inline std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

}  // namespace attnlab::cli
