#include "core/model/decode_buffers.h"

#include <utility>

namespace attnlab {

namespace {

thread_local int t_reuse_scopes = 0;

// The buffers kept on this thread, per element type.
template <typename T>
std::vector<std::vector<T>>& kept() {
  thread_local std::vector<std::vector<T>> buffers;
  return buffers;
}

}  // namespace

DecodeBufferReuse::DecodeBufferReuse() { ++t_reuse_scopes; }

DecodeBufferReuse::~DecodeBufferReuse() {
  if (--t_reuse_scopes == 0) {
    kept<float>().clear();
    kept<double>().clear();
  }
}

template <typename T>
int64_t DecodeBufferReuse::kept_elements() {
  int64_t total = 0;
  for (const std::vector<T>& buffer : kept<T>()) total += static_cast<int64_t>(buffer.size());
  return total;
}

namespace kv_buffers {

template <typename T>
std::vector<T> take(int64_t elements) {
  const auto wanted = static_cast<size_t>(elements);
  std::vector<std::vector<T>>& buffers = kept<T>();
  auto best = buffers.end();
  for (auto it = buffers.begin(); it != buffers.end(); ++it) {
    if (it->size() >= wanted && (best == buffers.end() || it->size() < best->size())) best = it;
  }
  if (best == buffers.end()) return std::vector<T>(wanted);
  std::vector<T> buffer = std::move(*best);
  buffers.erase(best);
  return buffer;
}

template <typename T>
void give_back(std::vector<T>&& buffer) {
  if (t_reuse_scopes == 0 || buffer.empty()) return;
  kept<T>().push_back(std::move(buffer));
}

template std::vector<float> take<float>(int64_t);
template std::vector<double> take<double>(int64_t);
template void give_back<float>(std::vector<float>&&);
template void give_back<double>(std::vector<double>&&);

}  // namespace kv_buffers

template int64_t DecodeBufferReuse::kept_elements<float>();
template int64_t DecodeBufferReuse::kept_elements<double>();

}  // namespace attnlab
