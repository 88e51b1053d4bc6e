// Shell quoting read back by a real bash, and the value checks for #SBATCH lines.
#include "core/cluster/shell.h"

#include <gtest/gtest.h>

#include "core/cluster/process.h"
#include "core/config/config.h"

namespace attnlab::cluster {
namespace {

const std::vector<std::string> kHostile = {
    "plain",
    "with space",
    "it's",
    "''",
    "\"double\" and 'single'",
    "$(touch /tmp/attnlab-pwned)",
    "`id`",
    "a; rm -rf /tmp/attnlab-pwned",
    "x && y || z | w > out < in & bg",
    "${HOME} $HOME \\$ \\\\",
    "line\nbreak",
    "tab\there",
    "*?[glob]~",
    "!history",
    "",
};

TEST(ShellQuote, KnownForms) {
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(ShellQuote, BashReadsEveryHostileWordBackUnchanged) {
  for (const std::string& text : kHostile) {
    // printf %s prints its one argument as is: any expansion or word split would change it.
    const CommandResult result = run_command({"bash", "-c", "printf %s " + shell_quote(text)});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, text);
  }
}

std::string rejection(ValueKind kind, const std::string& value) {
  try {
    check_value(kind, value, "profile.yaml: key");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(CheckValue, AcceptsWhatSlurmTakes) {
  EXPECT_EQ(rejection(ValueKind::kSlurmName, "gpu-short_2.a,cpu"), "");
  for (const char* time : {"30", "10:00", "04:00:00", "1-00", "2-12:30", "1-00:00:00"}) {
    EXPECT_EQ(rejection(ValueKind::kSlurmTime, time), "") << time;
  }
  for (const char* memory : {"4096", "4096M", "8G", "1T"}) {
    EXPECT_EQ(rejection(ValueKind::kSlurmMemory, memory), "") << memory;
  }
  for (const char* option : {"--exclusive", "--constraint=avx2", "--gres=gpu:1",
                             "--mail-user=a@b.org", "--nodelist=n[1-3]"}) {
    EXPECT_EQ(rejection(ValueKind::kSbatchOption, option), "") << option;
  }
  EXPECT_EQ(rejection(ValueKind::kEnvName, "OPENBLAS_CORETYPE"), "");
  EXPECT_EQ(rejection(ValueKind::kShellLine, "module load openmpi/4.1 && echo 'ok'"), "");
}

TEST(CheckValue, RejectsEveryHostileValueWithItsKeyAndWhatWasExpected) {
  for (const std::string& text : kHostile) {
    if (text == "plain") continue;
    EXPECT_NE(rejection(ValueKind::kSlurmName, text), "") << text;
    EXPECT_NE(rejection(ValueKind::kSlurmTime, text), "") << text;
    EXPECT_NE(rejection(ValueKind::kSlurmMemory, text), "") << text;
    EXPECT_NE(rejection(ValueKind::kSbatchOption, "--x=" + text), "") << text;
    EXPECT_NE(rejection(ValueKind::kEnvName, text), "") << text;
  }
  const std::string message = rejection(ValueKind::kSlurmName, "a; b");
  EXPECT_NE(message.find("profile.yaml: key"), std::string::npos) << message;
  EXPECT_NE(message.find("'a; b'"), std::string::npos) << message;
  EXPECT_NE(message.find("expected letters, digits"), std::string::npos) << message;
  EXPECT_NE(rejection(ValueKind::kShellLine, "echo a\nrm b"), "");
  EXPECT_NE(rejection(ValueKind::kSbatchOption, "-p x"), "");
  EXPECT_NE(rejection(ValueKind::kSbatchOption, "--partition x"), "");
}

}  // namespace
}  // namespace attnlab::cluster
