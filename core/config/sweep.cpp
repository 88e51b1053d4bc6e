// Sweep expansion (rows x grid x seeds), run ids and names, and the manifest.
#include "core/config/sweep.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/config/builder.h"
#include "core/config/config.h"
#include "core/config/options.h"
#include "core/config/suggest.h"
#include "core/util/files.h"
#include "core/util/path_name.h"

namespace attnlab::config {
namespace fs = std::filesystem;
namespace {

struct Row {
  std::string name;
  std::string group;
  YAML::Node set;  // a mapping of keys (nested or dotted), or null
  PaperValues paper;
  std::string versus;  // the row it is compared with, when not the base row
  std::string where;   // the row's location in the sweep file
};

struct GridAxis {
  std::string key;
  std::vector<YAML::Node> values;
};

// Fails unless every key of `map` is one of `allowed`, suggesting the closest.
void check_keys(const YAML::Node& map, const std::string& file, const std::string& section,
                const std::vector<std::string>& allowed) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    bool known = false;
    for (const std::string& name : allowed) known = known || key == name;
    if (known) continue;
    std::string best = closest(key, allowed);
    std::string message = "unknown key '";
    message.append(section).append(".").append(key).append("'");
    if (!best.empty())
      message.append(" (did you mean '").append(section).append(".").append(best).append("'?)");
    fail(location(file, it->first), message);
  }
}

std::string scalar(const YAML::Node& node, const std::string& file, const std::string& key) {
  if (!node.IsScalar()) fail(location(file, node), key + ": expected a string");
  return node.Scalar();
}

// The value of an enum key, from its name table; an error at the node's line names the choices.
template <typename Enum>
Enum named(const YAML::Node& node, const std::string& file, const EnumNames<Enum>& names) {
  const std::string text = scalar(node, file, names.key());
  const std::optional<Enum> value = names.find(text);
  if (!value)
    fail(location(file, node), names.key() + ": expected " + names.choices() + ", got " + text);
  return *value;
}

double yaml_number(const YAML::Node& node, const std::string& file, const std::string& key) {
  char* end = nullptr;
  const std::string text = node.IsScalar() ? node.Scalar() : "";
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    fail(location(file, node), key + ": expected a number, got " + (text.empty() ? "?" : text));
  }
  return value;
}

// A row's name or group: free text shown in the manifest, the status list and the report's tables,
// one line each, so control characters (a raw CR or tab that would break those lines) are refused.
std::string label(const YAML::Node& node, const std::string& file, const std::string& key) {
  std::string text = scalar(node, file, key);
  for (char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte == 0x7f) {
      fail(location(file, node), key + ": control character (byte " + std::to_string(byte) +
                                     ") in a label; use printable text");
    }
  }
  return text;
}

Row parse_row(const YAML::Node& node, const std::string& file) {
  if (!node.IsMap()) fail(location(file, node), "sweep.rows: each row must be a mapping");
  check_keys(node, file, "sweep.rows[]", {"name", "group", "set", "paper", "versus"});
  Row row;
  row.where = location(file, node);
  if (!node["name"]) fail(row.where, "sweep.rows[]: every row needs a name");
  row.name = label(node["name"], file, "sweep.rows[].name");
  if (node["group"]) row.group = label(node["group"], file, "sweep.rows[].group");
  if (node["versus"]) row.versus = label(node["versus"], file, "sweep.rows[].versus");
  if (node["set"]) {
    row.set = node["set"];
    if (!row.set.IsMap() && !row.set.IsNull()) {
      fail(location(file, row.set), "sweep.rows[].set: expected a mapping of keys to values");
    }
  }
  if (const YAML::Node paper = node["paper"]) {
    if (!paper.IsMap()) fail(location(file, paper), "sweep.rows[].paper: expected a mapping");
    check_keys(paper, file, "sweep.rows[].paper", {"ppl", "bleu", "params"});
    if (paper["ppl"]) row.paper.ppl = yaml_number(paper["ppl"], file, "paper.ppl");
    if (paper["bleu"]) row.paper.bleu = yaml_number(paper["bleu"], file, "paper.bleu");
    if (paper["params"]) row.paper.params = yaml_number(paper["params"], file, "paper.params");
  }
  return row;
}

// sweep.rows[].versus names another row of the file, one that is compared with the base row
// itself (no chains, so every comparison is one step from a row the reader can see). Adaptive
// seeds decide a row's seeds from its difference with the base row, so they refuse it.
void check_references(const std::vector<Row>& rows, const YAML::Node& section) {
  for (const Row& row : rows) {
    if (row.versus.empty()) continue;
    if (section["seeds"] && section["seeds"].IsMap()) {
      fail(row.where,
           "sweep.rows[].versus: adaptive seeds (sweep.seeds as {min, max}) compare "
           "every row with the base row; give a list of seeds");
    }
    if (row.versus == row.name) {
      fail(row.where, "sweep.rows[].versus: row '" + row.name + "' is compared with itself");
    }
    const auto target = std::find_if(rows.begin(), rows.end(),
                                     [&](const Row& other) { return other.name == row.versus; });
    if (target == rows.end()) {
      fail(row.where, "sweep.rows[].versus: no row is named '" + row.versus + "'");
    }
    if (!target->versus.empty()) {
      fail(row.where, "sweep.rows[].versus: row '" + row.versus + "' is itself compared with '" +
                          target->versus + "'; compare with a row that is compared with base");
    }
  }
}

int64_t seed_count(const YAML::Node& node, const std::string& file, const std::string& key) {
  char* end = nullptr;
  const std::string text = node.IsScalar() ? node.Scalar() : "";
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || value < 2 || value > 1000) {
    fail(location(file, node),
         key + ": expected an integer in [2, 1000], got " + (text.empty() ? "?" : text));
  }
  return value;
}

}  // namespace

const EnumNames<SeedRule>& seed_rule_names() {
  static const EnumNames<SeedRule> names("sweep.seeds.until", {{SeedRule::sequential, "sequential"},
                                                               {SeedRule::resolved, "resolved"}});
  return names;
}

const EnumNames<VerdictTest>& verdict_test_names() {
  static const EnumNames<VerdictTest> names(
      "sweep.test",
      {{VerdictTest::kWelchPermutation, "welch+permutation"}, {VerdictTest::kWelch, "welch"}});
  return names;
}

namespace {

AdaptiveSeeds parse_adaptive_seeds(const YAML::Node& map, const std::string& file) {
  check_keys(map, file, "sweep.seeds", {"min", "max", "until", "effect", "confidence"});
  AdaptiveSeeds adaptive;
  if (!map["min"] || !map["max"]) {
    fail(location(file, map), "sweep.seeds: adaptive seeds need min and max");
  }
  adaptive.min = seed_count(map["min"], file, "sweep.seeds.min");
  adaptive.max = seed_count(map["max"], file, "sweep.seeds.max");
  if (adaptive.max < adaptive.min) {
    fail(location(file, map["max"]), "sweep.seeds.max (" + std::to_string(adaptive.max) +
                                         ") must be >= sweep.seeds.min (" +
                                         std::to_string(adaptive.min) + ")");
  }
  if (map["until"]) {
    adaptive.until = named(map["until"], file, seed_rule_names());
  }
  if (map["effect"]) {
    adaptive.effect = yaml_number(map["effect"], file, "sweep.seeds.effect");
    if (!(adaptive.effect > 0.0)) {
      fail(location(file, map["effect"]),
           "sweep.seeds.effect: expected a number > 0 (a "
           "fraction of the base row's mean, e.g. 0.02)");
    }
  }
  if (map["confidence"]) {
    adaptive.confidence = yaml_number(map["confidence"], file, "sweep.seeds.confidence");
    if (!(adaptive.confidence > 0.0 && adaptive.confidence < 1.0)) {
      fail(location(file, map["confidence"]),
           "sweep.seeds.confidence: expected a number in "
           "(0, 1), e.g. 0.95");
    }
  }
  return adaptive;
}

// Letters, digits, '.' and '_' survive; any other run of characters becomes one '-'.
std::string slug(const std::string& text) {
  std::string out;
  for (char ch : text) {
    bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_';
    if (keep) {
      out += ch;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string leaf(const std::string& key) { return key.substr(key.rfind('.') + 1); }

}  // namespace

uint64_t fnv1a64(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV offset basis
  for (unsigned char byte : text) {
    hash ^= byte;
    hash *= 0x100000001b3ull;  // FNV prime
  }
  return hash;
}

std::string run_id(const ExperimentConfig& config) {
  ExperimentConfig defaults;
  defaults.model.resolve_defaults();
  const auto reference = flatten(defaults);
  const auto values = flatten(config);
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& key = values[i].first;
    if (key == "name" || key == "log.dir" || key.rfind("cluster.", 0) == 0) continue;
    if (values[i].second != reference[i].second) text += key + "=" + values[i].second + "\n";
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
  return std::string(hex, 12);
}

namespace {

// The sweep `section` over the experiment in `base`; `file` names where the section came from in
// messages and in the manifest.
// Where a grid or seeds value came from, for messages: its line in the sweep file, or the
// command-line option that gave it (--grid KEY=..., --seeds), which has no line.
struct SweepOrigin {
  std::string file;
  bool command_line = false;

  std::string grid(const std::string& key, const YAML::Node& node) const {
    return command_line ? "--grid " + key : location(file, node);
  }
  std::string seeds(const YAML::Node& node) const {
    return command_line ? std::string("--seeds") : location(file, node);
  }
};

Sweep expand_section(const ConfigBuilder& base, const YAML::Node& section,
                     const SweepOrigin& origin, const std::vector<std::string>& sets) {
  const std::string& file = origin.file;
  if (!section.IsMap()) fail(location(file, section), "sweep: expected a mapping");
  check_keys(section, file, "sweep", {"name", "seeds", "rows", "grid", "test"});

  Sweep sweep;
  sweep.source = file;
  sweep.sets = sets;
  const YAML::Node name_node = section["name"];
  sweep.name = slug(name_node ? scalar(name_node, file, "sweep.name") : base.current().name);
  if (const std::string problem = path_name_problem(sweep.name); !problem.empty()) {
    fail(name_node ? location(file, name_node) : file,
         "sweep.name (the sweep's directory under --out, after replacing characters other than "
         "letters, digits, . and _ with -): " +
             problem);
  }

  if (section["test"]) sweep.test = named(section["test"], file, verdict_test_names());

  std::vector<Row> rows;
  if (const YAML::Node list = section["rows"]) {
    if (!list.IsSequence()) fail(location(file, list), "sweep.rows: expected a list of rows");
    for (const YAML::Node& node : list) rows.push_back(parse_row(node, file));
  }
  if (rows.empty()) rows.push_back(Row{"", "", YAML::Node(), {}, "", file});
  check_references(rows, section);

  std::vector<GridAxis> grid;
  if (const YAML::Node map = section["grid"]) {
    if (!map.IsMap()) fail(location(file, map), "sweep.grid: expected a mapping of key: [values]");
    for (auto it = map.begin(); it != map.end(); ++it) {
      GridAxis axis{it->first.Scalar(), {}};
      if (!find_option(axis.key)) {
        fail(origin.grid(axis.key, it->first),
             "unknown key '" + axis.key + "' in sweep.grid" + suggestion(axis.key));
      }
      if (!it->second.IsSequence() || it->second.size() == 0) {
        fail(location(file, it->second), "sweep.grid." + axis.key + ": expected a list of values");
      }
      // A copy: yaml-cpp's iterator hands out a temporary pair, so a reference would dangle.
      const YAML::Node values = it->second;
      for (const YAML::Node& value : values) axis.values.push_back(value);
      grid.push_back(axis);
    }
  }

  std::vector<YAML::Node> seeds;
  if (const YAML::Node list = section["seeds"]; list && list.IsMap()) {
    sweep.adaptive = parse_adaptive_seeds(list, file);
    // Seeds 1..max; each carries the location of the seeds map for messages.
    for (int64_t seed = 1; seed <= sweep.adaptive->max; ++seed) {
      seeds.emplace_back(std::to_string(seed));
    }
  } else if (list) {
    if (!list.IsSequence() || list.size() == 0) {
      fail(location(file, list),
           "sweep.seeds: expected a list of seeds or {min, max, until: sequential}");
    }
    for (const YAML::Node& seed : list) seeds.push_back(seed);
  }

  // Grid combinations in odometer order: the last axis changes fastest.
  // Counted before anything is expanded, in a type that cannot overflow at these bounds: a grid
  // of 10 keys x 10 values would otherwise expand for ever.
  size_t combinations = 1;
  const size_t per_combination = rows.size() * std::max<size_t>(seeds.size(), 1);
  for (const GridAxis& axis : grid) {
    combinations *= axis.values.size();
    if (combinations * per_combination > kMaxSweepRuns) {
      fail(location(file, section), "the sweep would hold more than " +
                                        std::to_string(kMaxSweepRuns) +
                                        " runs (rows x grid combinations x seeds); split it");
    }
  }
  std::map<std::string, std::string> id_owner;    // id -> run name
  std::map<std::string, std::string> name_where;  // run name -> location of its row
  for (const Row& row : rows) {
    for (size_t combination = 0; combination < combinations; ++combination) {
      std::vector<size_t> pick(grid.size());
      for (size_t a = grid.size(), rest = combination; a-- > 0; rest /= grid[a].values.size()) {
        pick[a] = rest % grid[a].values.size();
      }
      for (size_t s = 0; s < std::max<size_t>(seeds.size(), 1); ++s) {
        ConfigBuilder builder = base;
        const int before_row = builder.mark();
        if (row.set && row.set.IsMap()) builder.add_map(row.set, file);
        std::vector<std::string> name_parts;
        if (!row.name.empty()) name_parts.push_back(slug(row.name));
        for (size_t a = 0; a < grid.size(); ++a) {
          const YAML::Node& value = grid[a].values[pick[a]];
          builder.apply(grid[a].key, value, origin.grid(grid[a].key, value));
          name_parts.push_back(slug(leaf(grid[a].key) + "-" + value.Scalar()));
        }
        std::vector<std::string> overridden = builder.keys_set_since(before_row);
        if (!seeds.empty()) {
          const YAML::Node where = sweep.adaptive ? section["seeds"] : seeds[s];
          builder.apply("seed", seeds[s], origin.seeds(where));
        }
        for (const std::string& set : sets) builder.add_set(set);

        SweepRun run;
        if (name_parts.empty()) name_parts.push_back(slug(sweep.name));
        std::string name;
        for (const std::string& part : name_parts) name += part + ".";
        try {
          run.config = builder.finish();
        } catch (const ConfigError& error) {
          const std::string seed =
              seeds.empty() ? std::to_string(builder.current().seed) : seeds[s].Scalar();
          std::string message = error.what();
          message.append(" [in run ").append(name).append("seed").append(seed).append("]");
          throw ConfigError(message);
        }
        run.seed = run.config.seed;
        run.row = name.substr(0, name.size() - 1);
        run.name = name + "seed" + std::to_string(run.seed);
        // Checked here, before a manifest or a run exists: the name becomes the run's link under
        // <sweep>/names/ and its directory name with `attnlab train`.
        if (const std::string problem = path_name_problem(run.name); !problem.empty()) {
          fail(row.where, "run name of row '" + (row.name.empty() ? sweep.name : row.name) + "' (" +
                              std::to_string(run.name.size()) + " bytes: " +
                              "the row's name, its grid values and the seed): " + problem +
                              "; shorten the row's name");
        }
        run.config.name = run.name;
        run.group = row.group;
        run.paper = row.paper;
        if (!row.versus.empty()) {
          // The reference row at the same grid values: its key differs only in the row's part.
          run.versus = slug(row.versus) + run.row.substr(slug(row.name).size());
        }
        for (const std::string& key : overridden) {
          run.overrides.emplace_back(key, find_option(key)->show(run.config));
        }
        run.id = run_id(run.config);
        const std::string where = row.where;
        if (auto [it, fresh] = id_owner.emplace(run.id, run.name); !fresh) {
          fail(where, "runs '" + it->second + "' and '" + run.name +
                          "' have the same configuration (id " + run.id +
                          "); a sweep must not repeat a run");
        }
        if (auto [it, fresh] = name_where.emplace(run.name, where); !fresh) {
          fail(where, "two runs are named '" + run.name + "' (the other row is at " + it->second +
                          "); row names must differ");
        }
        sweep.runs.push_back(std::move(run));
      }
    }
  }
  return sweep;
}

}  // namespace

Sweep expand(const std::string& path, const std::vector<std::string>& sets) {
  ConfigBuilder base;
  const YAML::Node section = base.add_file(path, /*allow_sweep=*/true);
  const std::string file = fs::path(path).lexically_normal().string();
  if (section.IsNull())
    fail(file, "no sweep: section (rows, grid or seeds); use -c for a single run");
  return expand_section(base, section, SweepOrigin{file, false}, sets);
}

// One value of --grid or --seeds read as YAML; a parse error names the option.
YAML::Node load_value(const std::string& text, const std::string& option) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& error) {
    fail(option, "'" + text + "' is not a YAML value (" + error.msg + ")");
  }
  return {};
}

Sweep expand_command_line(const std::string& experiment, const CommandLineSweep& spec,
                          const std::vector<std::string>& sets) {
  ConfigBuilder base;
  base.add_file(experiment);
  const std::string file = fs::path(experiment).lexically_normal().string();
  // The same section the YAML form would hold, so both expand alike (same names and ids).
  YAML::Node section(YAML::NodeType::Map);
  if (!spec.name.empty()) section["name"] = spec.name;
  for (const auto& [key, values] : spec.grid) {
    if (values.empty()) fail("--grid " + key, "expected KEY=V1,V2,...");
    YAML::Node list(YAML::NodeType::Sequence);
    for (const std::string& value : values) list.push_back(load_value(value, "--grid " + key));
    if (section["grid"] && section["grid"][key]) fail("--grid " + key, "the key is given twice");
    section["grid"][key] = list;
  }
  if (!spec.seeds.empty()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const std::string& seed : spec.seeds) list.push_back(load_value(seed, "--seeds"));
    section["seeds"] = list;
  }
  return expand_section(base, section, SweepOrigin{file, true}, sets);
}

const SweepRun& find_run(const Sweep& sweep, const std::string& id_or_name) {
  std::vector<std::string> names;
  for (const SweepRun& run : sweep.runs) {
    if (run.id == id_or_name || run.name == id_or_name) return run;
    names.push_back(run.name);
  }
  std::string best = closest(id_or_name, names);
  throw ConfigError(sweep.source + ": no run '" + id_or_name + "' in sweep '" + sweep.name + "'" +
                    (best.empty() ? "" : " (did you mean '" + best + "'?)"));
}

std::string manifest_yaml(const Sweep& sweep) {
  std::ostringstream out;
  out << "# attnlab sweep manifest: one entry per run; ids are stable hashes of the resolved "
         "config.\n";
  out << "sweep: " << format_string(sweep.name) << "\n";
  out << "source: " << format_string(sweep.source) << "\n";
  out << "sets: [";
  for (size_t i = 0; i < sweep.sets.size(); ++i) {
    out << (i ? ", " : "") << format_string(sweep.sets[i]);
  }
  out << "]\n";
  if (sweep.allow_dirty) out << "allow_dirty: true\n";
  if (sweep.test != VerdictTest::kWelchPermutation)
    out << "test: " << format_string(verdict_test_names().name(sweep.test)) << "\n";
  if (sweep.adaptive) {
    const AdaptiveSeeds& a = *sweep.adaptive;
    out << "seeds: {min: " << a.min << ", max: " << a.max
        << ", until: " << seed_rule_names().name(a.until) << ", effect: " << format_number(a.effect)
        << ", confidence: " << format_number(a.confidence) << "}\n";
    out << "seed_decisions: {";
    for (size_t i = 0; i < sweep.seed_decisions.size(); ++i) {
      out << (i ? ", " : "") << format_string(sweep.seed_decisions[i].first) << ": "
          << format_string(sweep.seed_decisions[i].second);
    }
    out << "}\n";
  }
  out << "runs:\n";
  for (const SweepRun& run : sweep.runs) {
    out << "  - id: " << format_string(run.id) << "\n";
    out << "    name: " << format_string(run.name) << "\n";
    out << "    group: " << format_string(run.group) << "\n";
    out << "    seed: " << run.seed << "\n";
    out << "    overrides: {";
    for (size_t i = 0; i < run.overrides.size(); ++i) {
      out << (i ? ", " : "") << run.overrides[i].first << ": " << run.overrides[i].second;
    }
    out << "}\n";
    if (!run.versus.empty()) out << "    versus: " << format_string(run.versus) << "\n";
    std::vector<std::string> paper;
    if (run.paper.ppl) paper.push_back("ppl: " + format_number(*run.paper.ppl));
    if (run.paper.bleu) paper.push_back("bleu: " + format_number(*run.paper.bleu));
    if (run.paper.params) paper.push_back("params: " + format_number(*run.paper.params));
    if (!paper.empty()) {
      out << "    paper: {";
      for (size_t i = 0; i < paper.size(); ++i) out << (i ? ", " : "") << paper[i];
      out << "}\n";
    }
  }
  return out.str();
}

std::string write_manifest(const Sweep& sweep, const std::string& runs_dir) {
  const fs::path dir = fs::path(runs_dir) / sweep.name;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw Error("cannot create " + dir.string() + ": " + error.message());
  const fs::path path = dir / "manifest.yaml";
  write_file_atomically(path.string(), manifest_yaml(sweep));  // never half a manifest
  return path.string();
}

}  // namespace attnlab::config
