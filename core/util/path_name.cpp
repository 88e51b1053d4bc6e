#include "core/util/path_name.h"

namespace attnlab {
namespace {

bool allowed(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '.' || ch == '_' || ch == '-' || ch == '+' || ch == '=';
}

}  // namespace

std::string path_name_problem(const std::string& name) {
  if (name.empty()) return "a name is needed (it becomes a directory name)";
  if (name == "." || name == "..") {
    return "'" + name + "' would name " +
           (name == "." ? "the output directory itself" : "the parent of the output directory") +
           ", not a directory inside it";
  }
  if (name.size() > kMaxPathNameLength) {
    return "longer than " + std::to_string(kMaxPathNameLength) +
           " bytes, the limit of a name (files named after it, with their suffixes, stay within "
           "the 255 bytes a file name may have)";
  }
  for (char ch : name) {
    if (!allowed(ch)) {
      const auto byte = static_cast<unsigned char>(ch);
      std::string shown = byte >= 0x20 && byte < 0x7f ? std::string("'") + ch + "'"
                                                      : "byte " + std::to_string(byte);
      std::string problem = "'" + name + "' has ";
      problem += shown;
      problem += "; a name is one directory level: letters, digits and . _ - + =";
      return problem;
    }
  }
  if (name.front() == '.') return "'" + name + "' starts with '.' (a hidden directory)";
  return "";
}

}  // namespace attnlab
