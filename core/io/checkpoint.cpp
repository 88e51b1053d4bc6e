// Checkpoint files: atomic save, open with schema checks, architecture and tensor matching.
#include "core/io/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/util/build_info.h"
#include "core/util/check.h"
#include "core/util/files.h"
#include "core/util/sha256.h"

namespace attnlab::io {

namespace {

constexpr const char* kScalarsGroup = "scalars";
constexpr const char* kDataPositionGroup = "data_position";

// SHA-256 over every value a resume trusts besides the tensors (which carry Fletcher-32 checksums
// of their own): one "name=value" line each, doubles as their exact bits, in the order written.
// A flipped bit in the step, the data position or a scalar then fails the open instead of
// resuming silently somewhere else.
std::string metadata_digest(const CheckpointState& state, const std::string& version,
                            const std::string& commit) {
  std::ostringstream text;
  text << "step=" << state.step << "\narchitecture=" << state.architecture
       << "\nconfig_yaml=" << state.config_yaml << "\nattnlab_version=" << version
       << "\ngit_commit=" << commit << "\n";
  auto scalars = state.scalars;
  auto positions = state.data_position;
  std::sort(scalars.begin(), scalars.end());
  std::sort(positions.begin(), positions.end());
  for (const auto& [name, value] : scalars) {
    uint64_t bits = 0;
    static_assert(sizeof(bits) == sizeof(value));
    std::memcpy(&bits, &value, sizeof(bits));
    text << "scalars/" << name << "=" << bits << "\n";
  }
  for (const auto& [name, value] : positions) {
    text << "data_position/" << name << "=" << value << "\n";
  }
  return sha256_hex(text.str());
}

void write_checkpoint_file(const std::string& path, const CheckpointState& state,
                           const std::vector<std::pair<std::string, ConstTensors>>& groups) {
  h5::File file = h5::File::create(path, true);
  h5::Group& root = file.root();
  root.set_string("schema", kCheckpointSchema);
  root.set_int("schema_version", kCheckpointSchemaVersion);
  root.set_int("step", state.step);
  root.set_string("architecture", state.architecture);
  root.set_string("config_yaml", state.config_yaml);
  root.set_string("attnlab_version", attnlab_version());
  root.set_string("git_commit", git_commit());
  root.set_string("metadata_sha256", metadata_digest(state, attnlab_version(), git_commit()));
  h5::Group scalars = root.create_group(kScalarsGroup);
  for (const auto& [name, value] : state.scalars) scalars.set_double(name, value);
  h5::Group position = root.create_group(kDataPositionGroup);
  for (const auto& [name, value] : state.data_position) position.set_int(name, value);
  for (const auto& [group_name, tensors] : groups) {
    CHECK(group_name != kScalarsGroup && group_name != kDataPositionGroup)
        << path << ": '" << group_name << "' is reserved, not a tensor group name";
    h5::Group group = root.create_group(group_name);
    std::set<std::string> seen;
    for (const auto& [name, view] : tensors) {
      CHECK(!name.empty() && name.find('/') == std::string::npos)
          << path << ", /" << group_name << ": tensor name '" << name
          << "' must be non-empty without '/'";
      CHECK(seen.insert(name).second)
          << path << ", /" << group_name << ": tensor '" << name << "' given twice";
      CHECK(view.data() != nullptr || view.numel() == 0)
          << path << ", /" << group_name << ": tensor '" << name << "' has no data";
      group.write<float>(name, view.shape().dims(), view.data(), h5::WriteOptions{true});
    }
  }
  file.flush();
}

}  // namespace

void save_checkpoint(const std::string& path, const CheckpointState& state,
                     const std::vector<std::pair<std::string, ConstTensors>>& groups) {
  std::string temporary = path + ".tmp";
  // The tensors plus HDF5's metadata, about 3 KiB per tensor (its object header with the
  // checksum attributes; measured 354 KB for the 120 tensors of a tiny model), plus a reserve. A
  // checkpoint cut short by a full disk is removed (the older ones stay), but checking first
  // names the free space instead of an HDF5 error.
  constexpr int64_t kMetadataPerTensor = 4 << 10, kReserve = 256 << 10;
  int64_t bytes = kReserve;
  for (const auto& group : groups) {
    for (const auto& tensor : group.second) {
      bytes += tensor.second.numel() * static_cast<int64_t>(sizeof(float)) + kMetadataPerTensor;
    }
  }
  require_free_space(temporary, bytes, "a checkpoint");
  try {
    write_checkpoint_file(temporary, state, groups);  // closed when it returns
  } catch (const Error&) {
    std::remove(temporary.c_str());
    throw;
  }
  replace_file(temporary, path);
}

Checkpoint Checkpoint::open(const std::string& path) {
  h5::File file = h5::File::open(path, h5::Access::read);
  const h5::Group& root = file.root();
  CHECK(root.has_attribute("schema") && root.attribute_type("schema") == h5::ValueType::string &&
        root.get_string("schema") == kCheckpointSchema)
      << path << ": not an attnlab checkpoint (the root attribute 'schema' is not '"
      << kCheckpointSchema << "')";
  int64_t version = root.get_int("schema_version");
  CHECK(version >= 1 && version <= kCheckpointSchemaVersion)
      << path << ": checkpoint of schema_version " << version << ", this build reads 1 to "
      << kCheckpointSchemaVersion;
  CheckpointState state;
  state.step = root.get_int("step");
  state.architecture = root.get_string("architecture");
  state.config_yaml = root.get_string("config_yaml");
  h5::Group scalars = root.group(kScalarsGroup);
  for (const std::string& name : scalars.attribute_names()) {
    state.scalars.emplace_back(name, scalars.get_double(name));
  }
  h5::Group position = root.group(kDataPositionGroup);
  for (const std::string& name : position.attribute_names()) {
    state.data_position.emplace_back(name, position.get_int(name));
  }
  if (version >= 2) {
    CHECK(metadata_digest(state, root.get_string("attnlab_version"),
                          root.get_string("git_commit")) == root.get_string("metadata_sha256"))
        << path << ": the step, data position or scalars do not match the checkpoint's "
        << "metadata_sha256 (a damaged file)";
  }
  return Checkpoint(std::move(file), std::move(state));
}

std::vector<std::string> Checkpoint::groups() const {
  std::vector<std::string> names;
  for (const std::string& name : file_.root().names()) {
    if (name != kScalarsGroup && name != kDataPositionGroup && file_.root().has_group(name)) {
      names.push_back(name);
    }
  }
  return names;
}

std::vector<std::string> Checkpoint::tensor_names(const std::string& group) const {
  CHECK(file_.root().has_group(group))
      << "checkpoint " << path() << ": has no tensor group '" << group << "'";
  return file_.root().group(group).names();
}

void Checkpoint::check_architecture(const std::string& architecture) const {
  if (architecture == state_.architecture) return;
  std::istringstream stored(state_.architecture);
  std::istringstream expected(architecture);
  std::string stored_line;
  std::string expected_line;
  int line = 0;
  while (true) {
    ++line;
    bool has_stored = static_cast<bool>(std::getline(stored, stored_line));
    bool has_expected = static_cast<bool>(std::getline(expected, expected_line));
    if (!has_stored) stored_line = "<end>";
    if (!has_expected) expected_line = "<end>";
    if (stored_line != expected_line || (!has_stored && !has_expected)) break;
  }
  CHECK(false) << "checkpoint " << path() << " was written for another architecture: line " << line
               << " is '" << stored_line << "', the model has '" << expected_line << "'";
}

void Checkpoint::load(const std::string& group_name, const Tensors& tensors) const {
  std::vector<std::string> problems;
  auto complain = [&](const std::string& problem) { problems.push_back(problem); };
  CHECK(file_.root().has_group(group_name))
      << "checkpoint " << path() << ": has no tensor group '" << group_name << "'";
  h5::Group group = file_.root().group(group_name);
  std::vector<std::string> stored = group.names();
  std::set<std::string> expected;
  for (const auto& [name, view] : tensors) {
    expected.insert(name);
    if (!group.has_dataset(name)) {
      complain(std::string("tensor '")
                   .append(name)
                   .append("' that the model expects is missing from /")
                   .append(group_name));
      continue;
    }
    h5::Dataset dataset = group.dataset(name);
    Shape shape(dataset.dims());
    if (shape != view.shape()) {
      complain("tensor '" + name + "' has shape " + shape.str() + ", the model expects " +
               view.shape().str());
    }
  }
  for (const std::string& name : stored) {
    if (expected.count(name) == 0) {
      complain(std::string("/")
                   .append(group_name)
                   .append(" holds tensor '")
                   .append(name)
                   .append("' that the model does not have"));
    }
  }
  if (!problems.empty()) {
    std::string message = "checkpoint " + path() + ": ";
    size_t shown = std::min<size_t>(problems.size(), 8);
    for (size_t i = 0; i < shown; ++i) message += (i ? "; " : "") + problems[i];
    if (shown < problems.size()) {
      message += "; and " + std::to_string(problems.size() - shown) + " more";
    }
    throw Error(message);
  }
  for (const auto& [name, view] : tensors) {
    group.dataset(name).read_into(view.data(), view.numel());
  }
}

void Checkpoint::verify() const {
  std::vector<float> values;
  for (const std::string& group_name : groups()) {
    h5::Group group = file_.root().group(group_name);
    for (const std::string& name : group.names()) {
      h5::Dataset dataset = group.dataset(name);
      values.resize(static_cast<size_t>(Shape(dataset.dims()).numel()));
      dataset.read_into(values.data(), static_cast<int64_t>(values.size()));
    }
  }
}

}  // namespace attnlab::io
