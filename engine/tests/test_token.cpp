// Unit tests for the shutdown token (token.hpp): never from argv, only from
// a private file or the environment, never echoed in the config section.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "json.hpp"
#include "token.hpp"

using namespace rooftop;

namespace {

Options make() {
  Options o("shutdown", "test", {{"rank", OptKind::Int, "0", "rank", ""}, token_file_option("token")});
  retire_token_option(o);
  return o;
}

bool parse(Options& o, std::vector<std::string> a) {
  std::vector<char*> p;
  for (auto& x : a) p.push_back(x.data());
  return o.parse(static_cast<int>(p.size()), p.data());
}

std::string config_json(const Options& o) {
  JsonWriter w;
  o.write_json(w);
  return w.str();
}

// A file in a fresh private directory, with the given mode.
struct TokenFile {
  std::string dir, path;
  TokenFile(const std::string& text, mode_t mode) {
    char tmpl[] = "/tmp/rooftop-token-test-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/token";
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
  }
  ~TokenFile() {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
};

std::string error_of(Options& o) {
  try {
    load_token(o, 256);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Token, OnTheCommandLineIsRefusedWithoutEchoingIt) {
  for (auto form : {std::vector<std::string>{"--token", "s3cr3t"}, {"--token=s3cr3t"}}) {
    Options o = make();
    try {
      parse(o, form);
      FAIL() << "--token accepted";
    } catch (const UsageError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("--token-file"), std::string::npos) << m;
      EXPECT_NE(m.find("ROOFTOP_TOKEN"), std::string::npos) << m;
      EXPECT_EQ(m.find("s3cr3t"), std::string::npos) << m;
    }
  }
  EXPECT_EQ(make().help().find("--token "), std::string::npos);  // retired: not in --help
}

TEST(Token, FromAPrivateFileIsReadAndNeverEchoed) {
  TokenFile f("s3cr3t\nsecond line\n", 0600);
  Options o = make();
  parse(o, {"--token-file", f.path});
  EXPECT_EQ(load_token(o, 256), "s3cr3t");
  std::string j = config_json(o);
  EXPECT_EQ(j.find("s3cr3t"), std::string::npos) << j;
  EXPECT_NE(j.find("\"token\":\"<set>\""), std::string::npos) << j;
  EXPECT_NE(j.find(f.path), std::string::npos) << j;  // the path is recorded
}

TEST(Token, FileReadableByOthersIsRefused) {
  for (mode_t mode : {0644, 0640, 0604, 0660}) {
    TokenFile f("s3cr3t\n", mode);
    Options o = make();
    parse(o, {"--token-file", f.path});
    std::string m = error_of(o);
    EXPECT_NE(m.find("chmod 600"), std::string::npos) << std::oct << mode << ": " << m;
    EXPECT_EQ(m.find("s3cr3t"), std::string::npos) << m;
  }
  TokenFile strict("s3cr3t\n", 0400);
  Options o = make();
  parse(o, {"--token-file", strict.path});
  EXPECT_EQ(load_token(o, 256), "s3cr3t");
}

TEST(Token, MissingEmptyOrNotAFileIsRefused) {
  TokenFile empty("\n", 0600);
  Options o = make();
  parse(o, {"--token-file", empty.path});
  EXPECT_NE(error_of(o).find("is empty"), std::string::npos);
  Options o2 = make();
  parse(o2, {"--token-file", empty.path + ".missing"});
  EXPECT_NE(error_of(o2).find("No such file"), std::string::npos) << error_of(o2);
  Options o3 = make();
  parse(o3, {"--token-file", empty.dir});
  EXPECT_NE(error_of(o3).find("not a regular file"), std::string::npos) << error_of(o3);
}

TEST(Token, TooLongIsRefused) {
  TokenFile f(std::string(300, 'x') + "\n", 0600);
  Options o = make();
  parse(o, {"--token-file", f.path});
  EXPECT_NE(error_of(o).find("longer than 256"), std::string::npos);
}

TEST(Token, FromTheEnvironmentWhenNoFile) {
  Options o = make();
  parse(o, {});
  unsetenv(kTokenEnv);
  EXPECT_EQ(load_token(o, 256), "");
  EXPECT_NE(config_json(o).find("\"token\":\"<unset>\""), std::string::npos) << config_json(o);
  setenv(kTokenEnv, "from-env", 1);
  EXPECT_EQ(load_token(o, 256), "from-env");
  std::string j = config_json(o);
  EXPECT_EQ(j.find("from-env"), std::string::npos) << j;
  EXPECT_NE(j.find("\"token\":\"<set>\""), std::string::npos) << j;
  TokenFile f("from-file\n", 0600);  // an explicit file wins over the environment
  Options o2 = make();
  parse(o2, {"--token-file", f.path});
  EXPECT_EQ(load_token(o2, 256), "from-file");
  unsetenv(kTokenEnv);
}

TEST(Token, FileOwnedByAnotherUserIsRefused) {
  TokenFile f("s3cr3t\n", 0600);
  if (chown(f.path.c_str(), geteuid() == 65534 ? 65533 : 65534, static_cast<gid_t>(-1)) != 0)
    GTEST_SKIP() << "cannot give a file to another user here (not root)";
  Options o = make();
  parse(o, {"--token-file", f.path});
  std::string m = error_of(o);
  EXPECT_NE(m.find("not by this user"), std::string::npos) << m;
}
