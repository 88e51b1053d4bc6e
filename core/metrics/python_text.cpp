// Python's view of text for sacreBLEU's metrics: UTF-8 code points and str.split() whitespace.
#include "core/metrics/python_text.h"

namespace attnlab {

// Length in bytes of the Unicode whitespace character at text[i] (Python's str.split() set),
// or 0. Rules that match one byte at a time are equivalent to Python's per-character regexes
// here, because every character class involved is ASCII or its complement.
size_t whitespace_length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return 1;
  if (c == 0xC2 && i + 1 < text.size() && (byte(i + 1) == 0x85 || byte(i + 1) == 0xA0)) return 2;
  if (i + 2 < text.size()) {
    const uint32_t code = (uint32_t{c} << 16) | (uint32_t{byte(i + 1)} << 8) | byte(i + 2);
    if (code == 0xE19A80 || (code >= 0xE28080 && code <= 0xE2808A) || code == 0xE280A8 ||
        code == 0xE280A9 || code == 0xE280AF || code == 0xE2819F || code == 0xE38080) {
      return 3;  // U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000
    }
  }
  return 0;
}

// Python's str.rstrip(): drops the Unicode whitespace at the end of `text`.
void rstrip_whitespace(std::string& text) {
  while (!text.empty()) {
    size_t start = text.size() - 1;  // the last character's first byte
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    if (whitespace_length(text, start) != text.size() - start) return;
    text.resize(start);
  }
}

std::vector<std::string> split_whitespace(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < text.size();) {
    const size_t space = whitespace_length(text, i);
    if (space > 0) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
      i += space;
    } else {
      word.push_back(text[i++]);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// Python's str.split() whitespace as code points (the set whitespace_length matches in UTF-8).
bool is_python_space(CodePoint c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<CodePoint> decode_utf8(const std::string& text) {
  std::vector<CodePoint> code_points;
  code_points.reserve(text.size());
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  for (size_t i = 0; i < text.size();) {
    const unsigned char lead = byte(i);
    size_t length = 0;
    CodePoint c = 0;
    if (lead < 0x80) {
      length = 1;
      c = lead;
    } else if ((lead >> 5) == 0x6) {
      length = 2;
      c = lead & 0x1F;
    } else if ((lead >> 4) == 0xE) {
      length = 3;
      c = lead & 0x0F;
    } else if ((lead >> 3) == 0x1E) {
      length = 4;
      c = lead & 0x07;
    }
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (byte(i + k) & 0xC0) == 0x80;
      c = (c << 6) | (byte(i + k) & 0x3F);
    }
    if (valid) {
      code_points.push_back(c);
      i += length;
    } else {
      code_points.push_back(kRawByte + lead);
      i += 1;
    }
  }
  return code_points;
}

void append_utf8(std::string& out, CodePoint c) {
  if (c >= kRawByte) {
    out.push_back(static_cast<char>(c - kRawByte));
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace attnlab
