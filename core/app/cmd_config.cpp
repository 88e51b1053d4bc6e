// `attnlab config`: prints the resolved experiment YAML (--dump-config), its flat key=value form,
// or the reference of every key.
#include <iostream>

#include "core/app/cli.h"
#include "core/config/config.h"

namespace attnlab::cli {
namespace {

int run_config(const std::vector<std::string>& args) {
  po::options_description options("config options");
  add_config_options(options);
  options.add_options()("dump-config", "print the resolved YAML (the default)")(
      "flat", "print key=value lines instead (the HDF5 /config attributes)")(
      "no-comments", "leave out the help comments")(
      "reference", "print every key with its type, default and meaning (markdown)");
  po::positional_options_description positional;
  positional.add("config", -1);
  po::variables_map values;
  if (!parse("config", "[-c FILE ...] [--set KEY=VALUE ...] [--flat | --reference]", args, options,
             positional, values)) {
    return kExitOk;
  }
  if (values.count("reference")) {
    std::cout << config::option_reference();
    return kExitOk;
  }
  const ExperimentConfig experiment =
      config::load(strings(values, "config"), strings(values, "set"));
  if (values.count("flat")) {
    for (const auto& [key, value] : config::flatten(experiment)) {
      std::cout << key << "=" << value << "\n";
    }
  } else {
    std::cout << config::dump_yaml(experiment, !values.count("no-comments"));
  }
  return kExitOk;
}

const CommandRegistration kRegister{
    "config", "print the resolved experiment YAML (defaults < files < --set), or the key reference",
    &run_config};

}  // namespace
}  // namespace attnlab::cli
