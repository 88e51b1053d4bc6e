// Text as Python sees it, which is how sacreBLEU's metrics see it: UTF-8 decoded into code points
// (str indexing and slicing), and str.split()'s set of whitespace characters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

using CodePoint = int32_t;

// A byte that does not start a well-formed UTF-8 sequence is kept as itself: it decodes to
// kRawByte + byte, which no Unicode property matches, and encodes back to the same byte.
inline constexpr CodePoint kRawByte = 0x110000;

std::vector<CodePoint> decode_utf8(const std::string& text);
void append_utf8(std::string& out, CodePoint c);

// Python's str.split() whitespace as code points.
bool is_python_space(CodePoint c);

// Length in bytes of the Python whitespace character at text[i] (the set is_python_space
// matches, in UTF-8), or 0.
size_t whitespace_length(const std::string& text, size_t i);

// Python's str.rstrip(): drops the whitespace at the end of `text`.
void rstrip_whitespace(std::string& text);

// Python's str.split(): the words between runs of whitespace.
std::vector<std::string> split_whitespace(const std::string& text);

}  // namespace attnlab
