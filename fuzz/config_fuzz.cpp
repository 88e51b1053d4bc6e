// Experiment files, as `attnlab train -c`, `config`, `params` and `sweep` read them: a file
// without a sweep: section through config::load (ConfigBuilder: the file after its base: chain,
// every key and rule checked), a file with one through config::expand; then what the commands
// print of it (dump_yaml and flatten, or the sweep's manifest).
//
// The input holds up to four files split at bytes 0xFF: a.yaml (the file given on the command
// line), b.yaml, c.yaml and d.yaml, so that base: chains between them (and cycles, and the
// experiments' own chains, fuzz/make_seeds.py) are explored. Every file is first read through
// config::read_yaml_file, the reader other layers use (it calls load_yaml_file, the one YAML
// reader of the program); an input whose base: names anything but a plain file name is not
// interesting, as it would read files outside the scratch directory.
//
// Beyond crashes, two properties are checked: load() of what dump_yaml() prints gives back the same
// config (config.h promises it), and a sweep's manifest.yaml, as `attnlab sweep` writes it, reads
// back (cluster::read_manifest_runs, what `status` and `cancel` use) with every run's id, name and
// group; a value that does not survive being written is a finding too.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/cluster/records.h"
#include "core/config/config.h"
#include "core/config/sweep.h"
#include "core/config/yaml_tree.h"
#include "core/util/check.h"
#include "fuzz/fuzz_common.h"

namespace {

using attnlab::Error;
namespace config = attnlab::config;
namespace fuzz = attnlab::fuzz;

// A base: entry that resolves inside the directory of the file naming it.
bool is_local_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

// False when the file's base: names a path that could leave the scratch directory.
bool bases_stay_inside(const config::YamlNode& root) {
  const config::YamlNode* base = root.find("base");
  if (base == nullptr) return true;
  if (base->is_scalar()) return is_local_name(base->scalar);
  for (const config::YamlNode& item : base->items) {
    if (item.is_scalar() && !is_local_name(item.scalar)) return false;
  }
  return true;
}

// The manifest of `sweep` written and read back as the program does; traps when a run differs.
void check_manifest_round_trip(const config::Sweep& sweep) {
  const std::filesystem::path dir = fuzz::fresh_path("sweep", "");
  std::filesystem::create_directory(dir);
  fuzz::write_file(dir / "manifest.yaml", config::manifest_yaml(sweep));
  std::vector<attnlab::cluster::ManifestRun> runs;
  try {
    runs = attnlab::cluster::read_manifest_runs(dir.string());
  } catch (const Error& error) {
    std::fprintf(stderr, "the manifest does not read back: %s\n", error.what());
    __builtin_trap();
  }
  bool same = runs.size() == sweep.runs.size();
  for (size_t i = 0; same && i < runs.size(); ++i) {
    same = runs[i].id == sweep.runs[i].id && runs[i].name == sweep.runs[i].name &&
           runs[i].group == sweep.runs[i].group;
  }
  if (!same) {
    std::fprintf(stderr, "the manifest reads back other runs than were written\n");
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::clear_scratch();
  const auto parts = fuzz::split_parts(fuzz::as_text(data, size), 4);
  const char* names[] = {"a.yaml", "b.yaml", "c.yaml", "d.yaml"};
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string path = (fuzz::scratch_dir() / names[i]).string();
    fuzz::write_file(path, parts[i]);
    try {
      if (!bases_stay_inside(config::read_yaml_file(path, "the experiment"))) return -1;
    } catch (const Error&) {
      // Not YAML, or over a limit. The loaders below would report it again when they read this
      // file; a.yaml they always read, so they have nothing more to do with it.
      if (i == 0) return 0;
    }
  }
  const std::string top = (fuzz::scratch_dir() / "a.yaml").string();
  std::string dumped;
  try {
    if (config::has_sweep_section(top)) {
      check_manifest_round_trip(config::expand(top));
      return 0;
    }
    const attnlab::ExperimentConfig experiment = config::load(top);
    (void)config::flatten(experiment);
    dumped = config::dump_yaml(experiment, /*with_help=*/false);
  } catch (const Error&) {
    return 0;
  }
  // The round trip: what `attnlab config` prints is a file that loads to the same config.
  const auto again = fuzz::fresh_path("dumped", ".yaml");
  fuzz::write_file(again, dumped);
  std::string redumped;
  try {
    redumped = config::dump_yaml(config::load(again.string()), /*with_help=*/false);
  } catch (const Error& error) {
    std::fprintf(stderr, "the dumped config does not load: %s\n%s", error.what(), dumped.c_str());
    __builtin_trap();
  }
  if (redumped != dumped) {
    std::fprintf(stderr, "load(dump_yaml(c)) != c:\n--- dumped\n%s--- loaded again\n%s",
                 dumped.c_str(), redumped.c_str());
    __builtin_trap();
  }
  return 0;
}
