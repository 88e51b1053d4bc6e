// Replacing files atomically: a reader (or a process killed halfway) sees the old file or the
// new one, never half of either. The one implementation behind the manifest, Slurm records,
// hypotheses, run logs, checkpoints and tokenizer models.
#pragma once

#include <cstdint>
#include <string>

namespace attnlab {

// Renames the finished file `temporary` over `path`: the file is synced first and the directory
// after, so that after a crash the name never points at missing data. For files a library wrote
// (HDF5, SentencePiece) under a temporary name. On failure `temporary` is removed, `path` is as
// it was, and the Error names both.
void replace_file(const std::string& temporary, const std::string& path);

// Writes `contents` to <path>.tmp-<pid> and replaces `path` with it (as above).
void write_file_atomically(const std::string& path, const std::string& contents);

// Bytes an unprivileged process may still write on the file system that holds `path` (that of
// its nearest existing ancestor, when `path` does not exist yet).
int64_t free_bytes(const std::string& path);
// Checked before a write that a full disk must not cut short (HDF5 leaves a file whose flush
// failed half-written, unreadable): an Error naming `path`, the free space and `needed` unless
// the file system has at least `needed` bytes free. `what` says what would have been written.
void require_free_space(const std::string& path, int64_t needed, const std::string& what);

}  // namespace attnlab
