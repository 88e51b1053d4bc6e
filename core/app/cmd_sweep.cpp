// `attnlab sweep FILE --dry-run`: expands a sweep into runs (stable ids, readable names), prints
// them and writes runs/<sweep>/manifest.yaml.
#include <iomanip>
#include <iostream>

#include "core/app/cli.h"
#include "core/config/config.h"
#include "core/config/sweep.h"

namespace attnlab::cli {
namespace {

int run_sweep(const std::vector<std::string>& args) {
  po::options_description options("sweep options");
  options.add_options()("file", po::value<std::string>(), "sweep YAML (an experiment + sweep:)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one key in every run (wins over rows and grid; repeatable)")(
      "dry-run", "expand, print the runs and write the manifest; launch nothing")(
      "out", po::value<std::string>(),
      "runs directory; the manifest goes to <out>/<sweep>/manifest.yaml (default: log.dir)");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map values;
  if (!parse("sweep", "FILE --dry-run [--set KEY=VALUE ...] [--out DIR]", args, options, positional,
             values)) {
    return kExitOk;
  }
  if (!values.count("file")) throw UsageError("missing the sweep FILE");
  if (!values.count("dry-run")) {
    throw UsageError(
        "launching is not part of this command yet; pass --dry-run to expand the sweep and "
        "write its manifest");
  }
  const config::Sweep sweep =
      config::expand(values["file"].as<std::string>(), strings(values, "set"));
  const std::string runs_dir =
      values.count("out") ? values["out"].as<std::string>() : sweep.runs.front().config.log.dir;
  size_t width = 4;
  for (const config::SweepRun& run : sweep.runs) width = std::max(width, run.name.size());
  std::cout << "sweep " << sweep.name << ": " << sweep.runs.size() << " runs from " << sweep.source
            << "\n";
  std::cout << std::left << std::setw(14) << "id" << std::setw(static_cast<int>(width) + 2)
            << "name" << std::setw(7) << "group"
            << "overrides\n";
  for (const config::SweepRun& run : sweep.runs) {
    std::string overrides;
    for (const auto& [key, value] : run.overrides) {
      if (!overrides.empty()) overrides += ' ';
      overrides.append(key).append("=").append(value);
    }
    std::cout << std::setw(14) << run.id << std::setw(static_cast<int>(width) + 2) << run.name
              << std::setw(7) << run.group << (overrides.empty() ? "-" : overrides) << "\n";
  }
  std::cout << "wrote " << config::write_manifest(sweep, runs_dir) << "\n";
  return kExitOk;
}

const CommandRegistration kRegister{
    "sweep", "expand a sweep (rows x grid x seeds) into runs and write its manifest", &run_sweep};

}  // namespace
}  // namespace attnlab::cli
