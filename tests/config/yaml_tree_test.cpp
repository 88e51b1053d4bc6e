// read_yaml_file: kinds, positions, YAML's integer and boolean readings, and the two errors.
#include "core/config/yaml_tree.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/config/config.h"

namespace attnlab::config {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(YamlTree, ReadsKindsPositionsAndScalarReadings) {
  const std::string path = write_temp("attnlab_yaml_tree.yaml",
                                      "name: x\n"
                                      "count: 0x10\n"
                                      "flag: yes\n"
                                      "list: [a, 3]\n"
                                      "map:\n"
                                      "  inner: ~\n");
  const YamlNode root = read_yaml_file(path, "a test file");
  ASSERT_TRUE(root.is_map());
  ASSERT_EQ(root.fields.size(), 5u);
  EXPECT_EQ(root.fields[0].first, "name");  // file order
  EXPECT_EQ(root.fields[4].first, "map");
  EXPECT_EQ(root.keys[2].where("f"), "f:3:1");
  EXPECT_EQ(root.find("list")->where("f"), "f:4:7");

  const YamlNode& count = *root.find("count");
  EXPECT_EQ(count.scalar, "0x10");
  ASSERT_TRUE(count.integer.has_value());
  EXPECT_EQ(*count.integer, 16);  // YAML's hexadecimal integer
  EXPECT_FALSE(root.find("name")->integer.has_value());
  ASSERT_TRUE(root.find("flag")->boolean.has_value());
  EXPECT_TRUE(*root.find("flag")->boolean);
  EXPECT_FALSE(root.find("name")->boolean.has_value());

  const YamlNode& list = *root.find("list");
  ASSERT_TRUE(list.is_sequence());
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(list.items[0].text(), "a");
  EXPECT_EQ(*list.items[1].integer, 3);
  EXPECT_TRUE(root.find("map")->find("inner")->is_null());
  EXPECT_EQ(root.find("missing"), nullptr);
  EXPECT_EQ(list.find("a"), nullptr);  // not a mapping
  EXPECT_EQ(list.text(), "");
}

TEST(YamlTree, MissingFileAndSyntaxErrorNameTheFile) {
  try {
    read_yaml_file("/nonexistent/attnlab.yaml", "the cluster profile");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(),
                 "/nonexistent/attnlab.yaml: cannot read the cluster profile (no such file?)");
  }
  const std::string path = write_temp("attnlab_yaml_tree_bad.yaml", "a: 1\nb: [2, 3\n");
  try {
    read_yaml_file(path, "x");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ":", 0), 0u) << message;
    EXPECT_NE(message.find(":3:"), std::string::npos) << message;  // the line where it broke
  }
}

}  // namespace
}  // namespace attnlab::config
