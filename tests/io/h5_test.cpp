// core/io/h5: attribute, array and extendable-dataset round trips, and the errors of bad input.
#include "core/io/h5.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "io/expect_error.h"
#include "io/temp_dir.h"

namespace attnlab::h5 {
namespace {

using test::expect_error;
using test::TempDir;

TEST(H5Attributes, RoundTripEveryTypeAfterReopening) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  std::string long_text(200000, 'x');
  long_text[12345] = '\n';
  {
    File file = File::create(path);
    Group& root = file.root();
    root.set_int("big", int64_t{1} << 62);
    root.set_int("negative", -7);
    root.set_double("tenth", 0.1);
    root.set_double("infinite", -std::numeric_limits<double>::infinity());
    root.set_string("utf8", "Größe — 大小\nline two");
    root.set_string("empty", "");
    root.set_string("long", long_text);
    root.set_strings("tokens", {"▁the", "▁cat", "</s>", ""});
    Group child = root.create_group("child");
    child.set_int("x", 3);
  }
  File file = File::open(path, Access::read);
  const Group& root = file.root();
  EXPECT_EQ(root.get_int("big"), int64_t{1} << 62);
  EXPECT_EQ(root.get_int("negative"), -7);
  EXPECT_EQ(root.get_double("tenth"), 0.1);
  EXPECT_EQ(root.get_double("infinite"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(root.get_string("utf8"), "Größe — 大小\nline two");
  EXPECT_EQ(root.get_string("empty"), "");
  EXPECT_EQ(root.get_string("long"), long_text);
  EXPECT_EQ(root.get_strings("tokens"), (std::vector<std::string>{"▁the", "▁cat", "</s>", ""}));
  EXPECT_EQ(root.group("child").get_int("x"), 3);
  // Integers read as doubles are converted; names come back sorted.
  EXPECT_EQ(root.get_double("negative"), -7.0);
  EXPECT_EQ(root.attribute_names(),
            (std::vector<std::string>{"big", "empty", "infinite", "long", "negative", "tenth",
                                      "tokens", "utf8"}));
  EXPECT_EQ(root.attribute_type("big"), ValueType::integer);
  EXPECT_EQ(root.attribute_type("tenth"), ValueType::floating);
  EXPECT_EQ(root.attribute_type("utf8"), ValueType::string);
}

TEST(H5Attributes, ReplacingChangesTheType) {
  TempDir dir;
  File file = File::create(dir.file("a.h5"));
  file.root().set_int("value", 1);
  file.root().set_string("value", "one");
  EXPECT_EQ(file.root().get_string("value"), "one");
  EXPECT_EQ(file.root().attribute_names().size(), 1u);
}

TEST(H5Attributes, MissingOrWrongTypeNamesFileObjectAndAttribute) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  File file = File::create(path);
  Group group = file.root().create_group("train");
  group.set_string("label", "text");
  expect_error([&] { group.get_int("absent"); }, {path, "/train", "no attribute 'absent'"});
  expect_error([&] { group.get_double("label"); },
               {path, "/train", "'label' is a string, expected a number"});
  group.set_int("count", 2);
  expect_error([&] { group.get_string("count"); }, {"'count' is an integer, expected a string"});
}

template <typename T>
class H5Arrays : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(H5Arrays, ElementTypes);

TYPED_TEST(H5Arrays, RoundTripShapesFromScalarToThreeDimensions) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  std::vector<TypeParam> cube(2 * 3 * 4);
  for (size_t i = 0; i < cube.size(); ++i) cube[i] = static_cast<TypeParam>(i * 3) - 5;
  std::vector<TypeParam> line = {1, -2, 3};
  TypeParam scalar = 42;
  {
    File file = File::create(path);
    file.root().write<TypeParam>("cube", {2, 3, 4}, cube.data());
    file.root().write<TypeParam>("line", line);
    file.root().write<TypeParam>("scalar", {}, &scalar);
    file.root().write<TypeParam>("empty", {0, 5}, nullptr);
    file.root().write<TypeParam>("checked", {2, 3, 4}, cube.data(), WriteOptions{true});
  }
  File file = File::open(path, Access::read);
  Array<TypeParam> read_cube = file.root().read<TypeParam>("cube");
  EXPECT_EQ(read_cube.dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(read_cube.values, cube);
  EXPECT_EQ(file.root().read<TypeParam>("line").values, line);
  Array<TypeParam> read_scalar = file.root().read<TypeParam>("scalar");
  EXPECT_TRUE(read_scalar.dims.empty());
  EXPECT_EQ(read_scalar.values, std::vector<TypeParam>{42});
  EXPECT_EQ(file.root().dataset("scalar").rows(), 1);
  Array<TypeParam> read_empty = file.root().read<TypeParam>("empty");
  EXPECT_EQ(read_empty.dims, (std::vector<int64_t>{0, 5}));
  EXPECT_TRUE(read_empty.values.empty());
  EXPECT_EQ(file.root().read<TypeParam>("checked").values, cube);
  // Any stored number type reads as double.
  std::vector<double> as_double = file.root().dataset("cube").template read<double>();
  for (size_t i = 0; i < cube.size(); ++i) EXPECT_EQ(as_double[i], static_cast<double>(cube[i]));
}

TYPED_TEST(H5Arrays, ExtendableDatasetsAppendTruncateAndGrow) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  {
    File file = File::create(path);
    Dataset series = file.root().create_extendable<TypeParam>("series", {}, 4);
    Dataset table = file.root().create_extendable<TypeParam>("table", {3}, 2);
    EXPECT_EQ(series.rows(), 0);
    for (int i = 0; i < 10; ++i) {
      TypeParam value = static_cast<TypeParam>(i * i);
      series.append(&value, 1);
      std::vector<TypeParam> row = {static_cast<TypeParam>(i), static_cast<TypeParam>(-i), 7};
      table.append(row.data(), 1);
    }
    std::vector<TypeParam> two_rows = {1, 2, 3, 4, 5, 6};
    table.append(two_rows.data(), 2);
    series.append(two_rows.data(), 0);
    EXPECT_EQ(series.rows(), 10);
    EXPECT_EQ(table.dims(), (std::vector<int64_t>{12, 3}));
  }
  File file = File::open(path, Access::write);
  Dataset series = file.root().dataset("series");
  std::vector<TypeParam> values = series.template read<TypeParam>();
  ASSERT_EQ(values.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(values[static_cast<size_t>(i)], i * i);
  std::vector<TypeParam> table = file.root().dataset("table").template read<TypeParam>();
  EXPECT_EQ(table[3 * 4 + 1], -4);
  EXPECT_EQ(table[3 * 11 + 2], 6);

  series.resize_rows(3);
  EXPECT_EQ(series.template read<TypeParam>(), (std::vector<TypeParam>{0, 1, 4}));
  TypeParam next = 99;
  series.append(&next, 1);
  series.resize_rows(6);  // grows with zeros
  EXPECT_EQ(series.template read<TypeParam>(), (std::vector<TypeParam>{0, 1, 4, 99, 0, 0}));
}

// The dataspace message of a rank-1 extendable dataset stores its extent and its maximum
// (H5S_UNLIMITED) as two little-endian 8-byte words; rewriting the first is the damage one flipped
// bit in a run.h5 header did (a column claiming 2^31 rows).
std::string with_claimed_rows(const std::string& bytes, uint64_t rows, uint64_t claimed) {
  std::string pattern(reinterpret_cast<const char*>(&rows), 8);
  pattern += std::string(8, '\xff');
  size_t at = bytes.find(pattern);
  EXPECT_NE(at, std::string::npos) << "the dataspace message was not found";
  EXPECT_EQ(bytes.find(pattern, at + 1), std::string::npos) << "the pattern is not unique";
  std::string damaged = bytes;
  if (at != std::string::npos) damaged.replace(at, 8, reinterpret_cast<const char*>(&claimed), 8);
  return damaged;
}

TEST(H5Datasets, AHeaderClaimingMoreRowsThanTheFileStoresIsAnErrorNotAnAllocation) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  {
    File file = File::create(path);
    Dataset nll = file.root().create_extendable<double>("nll", {}, 8);
    std::vector<double> values(37, 1.5);
    nll.append(values.data(), 37);
  }
  const std::string bytes = test::file_bytes(path);

  std::string claims_2_31 = dir.file("claims_2_31.h5");
  test::write_bytes(claims_2_31, with_claimed_rows(bytes, 37, uint64_t{1} << 31));
  {
    File file = File::open(claims_2_31, Access::read);
    Dataset nll = file.root().dataset("nll");
    EXPECT_EQ(nll.rows(), int64_t{1} << 31);  // the shape itself is plausible
    expect_error([&] { nll.read<double>(); },
                 {claims_2_31, "/nll", "claims 2147483648 values", "damaged"});
    std::vector<double> out(37);
    expect_error([&] { nll.read_into(out.data(), 37); }, {"claims 2147483648 values"});
  }
  std::string claims_2_50 = dir.file("claims_2_50.h5");
  test::write_bytes(claims_2_50, with_claimed_rows(bytes, 37, uint64_t{1} << 50));
  {
    File file = File::open(claims_2_50, Access::read);
    expect_error([&] { file.root().dataset("nll").dims(); }, {"/nll", "more than 2^40 values"});
  }
  // A claim within what is stored still reads (the check is not an off-by-one away from intact
  // files): 37 rows in chunks of 8 store 40, so 40 is accepted and 41 is not.
  std::string claims_40 = dir.file("claims_40.h5");
  test::write_bytes(claims_40, with_claimed_rows(bytes, 37, 40));
  {
    File file = File::open(claims_40, Access::read);
    EXPECT_EQ(file.root().dataset("nll").read<double>().size(), 40u);
  }
  std::string claims_41 = dir.file("claims_41.h5");
  test::write_bytes(claims_41, with_claimed_rows(bytes, 37, 41));
  {
    File file = File::open(claims_41, Access::read);
    expect_error([&] { file.root().dataset("nll").read<double>(); }, {"claims 41 values"});
  }
}

TEST(H5Datasets, FixedDatasetsRefuseRowsAndStringsAreNotNumbers) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  File file = File::create(path);
  std::vector<double> values = {1, 2};
  Dataset fixed = file.root().write<double>("fixed", values);
  expect_error([&] { fixed.append(values.data(), 1); }, {path, "/fixed", "fixed-size"});
  expect_error([&] { fixed.resize_rows(1); }, {"/fixed", "fixed-size"});
  expect_error([&] { file.root().read<float>("absent"); }, {path, "has no dataset 'absent'"});
  expect_error([&] { file.root().write<double>("fixed", values); },
               {path, "/fixed", "cannot create dataset", "(HDF5: "});
}

TEST(H5Groups, LinksWithDotsListRemoveAndMissing) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  File file = File::create(path);
  Group params = file.root().create_group("params");
  std::vector<float> weight = {1, 2, 3, 4};
  params.write<float>("decoder.layers.3.encoder_attn.q_proj.weight", {2, 2}, weight.data());
  params.write<float>("a.bias", {4}, weight.data());
  params.create_group("nested");
  EXPECT_EQ(params.names(),
            (std::vector<std::string>{"a.bias", "decoder.layers.3.encoder_attn.q_proj.weight",
                                      "nested"}));
  EXPECT_TRUE(params.has_dataset("a.bias"));
  EXPECT_FALSE(params.has_group("a.bias"));
  EXPECT_TRUE(params.has_group("nested"));
  EXPECT_FALSE(params.has("absent"));
  EXPECT_EQ(params.dataset("decoder.layers.3.encoder_attn.q_proj.weight").path(),
            "/params/decoder.layers.3.encoder_attn.q_proj.weight");
  params.remove("a.bias");
  EXPECT_FALSE(params.has("a.bias"));
  expect_error([&] { file.root().group("absent"); }, {path, "has no group 'absent'"});
  EXPECT_EQ(file.root().require_group("params").names().size(), 2u);
}

TEST(H5Files, MissingNonHdf5AndExistingFilesAreClearErrors) {
  TempDir dir;
  std::string missing = dir.file("missing.h5");
  expect_error([&] { File::open(missing, Access::read); }, {missing, "no such file"});
  std::string text = dir.file("notes.h5");
  test::write_bytes(text, "not an hdf5 file\n");
  EXPECT_FALSE(File::is_hdf5(text));
  expect_error([&] { File::open(text, Access::read); }, {text, "not an HDF5 file"});
  std::string path = dir.file("a.h5");
  { File::create(path).root().set_int("kept", 1); }
  EXPECT_TRUE(File::is_hdf5(path));
  expect_error([&] { File::create(path); }, {path, "refusing to overwrite"});
  EXPECT_EQ(File::open(path, Access::read).root().get_int("kept"), 1);
  { File::create(path, true); }
  EXPECT_FALSE(File::open(path, Access::read).root().has_attribute("kept"));
}

TEST(H5Files, ReadOnlyFilesRefuseWrites) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  { File::create(path); }
  File file = File::open(path, Access::read);
  expect_error([&] { file.root().set_int("x", 1); }, {path, "attribute 'x'", "(HDF5: "});
}

TEST(H5Files, UnlockedReaderOpensAFileAWriterHolds) {
  TempDir dir;
  std::string path = dir.file("a.h5");
  File writer = File::create_unlocked(path);
  std::vector<double> value = {1.5};
  Dataset series = writer.root().create_extendable<double>("series", {}, 8);
  series.append(value.data(), 1);
  writer.flush();
  File reader = File::open_unlocked(path, Access::read);
  EXPECT_EQ(reader.root().dataset("series").read<double>(), value);
}

}  // namespace
}  // namespace attnlab::h5
