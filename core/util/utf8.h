// UTF-8 validity, for text that must be UTF-8: corpus and BLEU lines, YAML files and the strings
// they put into run logs (HDF5 UTF-8 attributes, which h5py decodes strictly).
#pragma once

#include <cstdint>
#include <string>

namespace attnlab {

// Byte offset of the first invalid UTF-8 sequence in `text`, or -1 when it is valid. Rejects
// overlong forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF.
int64_t find_invalid_utf8(const std::string& text);

}  // namespace attnlab
