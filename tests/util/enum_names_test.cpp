// EnumNames: one table gives the parser, the printer and the type text of an enum-valued key.
#include "core/util/enum_names.h"

#include <gtest/gtest.h>

#include <string>

namespace attnlab {
namespace {

enum class Colour { kRed, kGreen, kBlue };

const EnumNames<Colour>& colours() {
  static const EnumNames<Colour> names(
      "paint.colour", {{Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kBlue, "blue"}});
  return names;
}

TEST(EnumNames, ParsesAndPrintsEveryValueByItsOneName) {
  for (Colour colour : {Colour::kRed, Colour::kGreen, Colour::kBlue}) {
    EXPECT_EQ(colours().parse(colours().name(colour)), colour);
  }
  EXPECT_EQ(colours().name(Colour::kGreen), "green");
  EXPECT_EQ(colours().choices(), "red | green | blue");
}

TEST(EnumNames, AnUnknownNameIsAnErrorNamingTheKeyAndTheChoices) {
  try {
    colours().parse("Red");
    FAIL() << "parsed an unknown name";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("paint.colour 'Red' must be one of red | green | blue"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace attnlab
