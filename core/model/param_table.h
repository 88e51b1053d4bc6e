// ParamTable: the (name, shape, offset) table over the flat parameter buffer, built from the
// config. Parameters, gradients and Adam moments share this layout, so each is one contiguous
// buffer.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model/model_config.h"
#include "core/tensor/tensor.h"

namespace attnlab {

enum class ParamInit { kXavierUniform, kZeros, kOnes, kEmbeddingNormal, kConstant };

struct ParamEntry {
  std::string name;  // fairseq-style: decoder.layers.3.encoder_attn.q_proj.weight
  Shape shape;
  int64_t offset = 0;     // into the flat buffer, in elements
  std::string component;  // for parameter counts: embeddings, encoder.attention, ...
  ParamInit init = ParamInit::kZeros;
  double init_value = 0.0;  // kConstant
  // The layer it belongs to ("decoder.layers.3"), a stack's final norm ("encoder.layer_norm"),
  // or "embeddings" (token and position embeddings, output projection); set by the model's table.
  std::string group;
};

class ParamTable {
 public:
  ParamTable() = default;
  explicit ParamTable(const ModelConfig& config);

  // Adds an entry at the end of the buffer and returns its index.
  int add(const std::string& name, Shape shape, const std::string& component, ParamInit init,
          double init_value = 0.0);
  const std::vector<ParamEntry>& entries() const { return entries_; }
  const ParamEntry& entry(int index) const { return entries_[static_cast<size_t>(index)]; }
  // Index of a name; throws Error naming it when absent.
  int index_of(const std::string& name) const;
  bool contains(const std::string& name) const { return by_name_.count(name) != 0; }
  int64_t size() const { return size_; }

  template <typename T>
  TensorView<T> view(T* buffer, int index) const {
    const ParamEntry& e = entry(index);
    return TensorView<T>(buffer + e.offset, e.shape);
  }
  // (name, view) of every tensor of a buffer laid out by this table, in table order: what a
  // checkpoint group is written from and read into.
  template <typename T>
  std::vector<std::pair<std::string, TensorView<T>>> named_views(T* buffer) const {
    std::vector<std::pair<std::string, TensorView<T>>> views;
    for (const ParamEntry& e : entries_)
      views.emplace_back(e.name, TensorView<T>(buffer + e.offset, e.shape));
    return views;
  }
  // Fills a buffer laid out by this table with the initial values (seeded, table order).
  template <typename T>
  void initialise(T* buffer, const ModelConfig& config, uint64_t seed) const;

 private:
  std::vector<ParamEntry> entries_;
  std::unordered_map<std::string, int> by_name_;
  int64_t size_ = 0;
};

}  // namespace attnlab
