// Unit tests for what a node agent trusts in its folder (agent_files.hpp):
// its folder is its user's and writable by no one else; a request is a
// regular file of its user, never a link; a folder renamed or replaced
// under it is noticed; its own writes follow no link.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agent_files.hpp"

using namespace rooftop;

namespace {

// The uid and gid of "nobody": another user of the machine.
constexpr uid_t kOther = 65534;

// A fresh private folder, held by descriptor, removed (with what the tests
// put in it) at the end.
struct Folder {
  std::string path;
  int fd = -1;
  Folder() {
    char tmpl[] = "/tmp/rooftop-agent-test-XXXXXX";
    path = mkdtemp(tmpl);
    fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~Folder() {
    close(fd);
    std::error_code ec;
    for (const char* suffix : {"", ".moved", ".outside"}) std::filesystem::remove_all(path + suffix, ec);
  }
  std::string at(const std::string& name) const { return path + "/" + name; }
  void file(const std::string& name, const std::string& text = "x") const { std::ofstream(at(name)) << text; }
};

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST(AgentFiles, OwnPrivateFolderIsTrustedOtherwiseSaysWhy) {
  Folder d;
  EXPECT_EQ(untrusted_folder(d.fd), "");
  chmod(d.path.c_str(), 0770);
  EXPECT_NE(untrusted_folder(d.fd).find("writable by other users (mode 0770)"), std::string::npos);
  chmod(d.path.c_str(), 0700);
  if (geteuid() == 0) {
    ASSERT_EQ(chown(d.path.c_str(), kOther, kOther), 0);
    EXPECT_NE(untrusted_folder(d.fd).find("owned by uid 65534"), std::string::npos);
  }
}

TEST(AgentFiles, RequestOfThisUserIsOpened) {
  Folder d;
  d.file("req-0", "content");
  std::string why;
  int fd = open_request(d.fd, "req-0", why);
  ASSERT_GE(fd, 0) << why;
  char buf[16] = {};
  EXPECT_EQ(read(fd, buf, sizeof buf), 7);
  close(fd);
  EXPECT_EQ(why, "");
}

TEST(AgentFiles, GoneRequestIsNoRefusal) {
  Folder d;
  std::string why = "stale";
  EXPECT_EQ(open_request(d.fd, "req-1", why), -1);
  EXPECT_EQ(why, "");
  EXPECT_EQ(untrusted_entry(d.fd, "stop"), "gone");
}

TEST(AgentFiles, LinkFolderAndFifoAreRefusedWithoutBlocking) {
  Folder d;
  d.file("target");
  ASSERT_EQ(symlink(d.at("target").c_str(), d.at("req-1").c_str()), 0);
  ASSERT_EQ(mkdir(d.at("req-2").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo(d.at("req-3").c_str(), 0600), 0);  // no writer: a blocking open would hang
  std::string why;
  EXPECT_EQ(open_request(d.fd, "req-1", why), -1);
  EXPECT_EQ(why, "a symbolic link");
  EXPECT_EQ(open_request(d.fd, "req-2", why), -1);
  EXPECT_EQ(why, "not a regular file");
  EXPECT_EQ(open_request(d.fd, "req-3", why), -1);
  EXPECT_EQ(why, "not a regular file");
  EXPECT_EQ(untrusted_entry(d.fd, "req-1"), "a symbolic link");
  EXPECT_EQ(untrusted_entry(d.fd, "req-2"), "not a regular file");
}

TEST(AgentFiles, RequestOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  Folder d;
  d.file("req-4");
  d.file("stop");
  ASSERT_EQ(chown(d.at("req-4").c_str(), kOther, kOther), 0);
  ASSERT_EQ(chown(d.at("stop").c_str(), kOther, kOther), 0);
  std::string why;
  EXPECT_EQ(open_request(d.fd, "req-4", why), -1);
  EXPECT_EQ(why, "owned by uid 65534, not by this agent's user (uid 0)");
  EXPECT_EQ(untrusted_entry(d.fd, "stop"), "owned by uid 65534, not by this agent's user (uid 0)");
}

TEST(AgentFiles, RenamedOrReplacedFolderIsNoticed) {
  Folder d;
  EXPECT_EQ(folder_moved(d.path, d.fd), "");
  ASSERT_EQ(rename(d.path.c_str(), (d.path + ".moved").c_str()), 0);
  EXPECT_NE(folder_moved(d.path, d.fd).find("it is gone"), std::string::npos);
  ASSERT_EQ(mkdir(d.path.c_str(), 0700), 0);  // another folder under its name
  EXPECT_NE(folder_moved(d.path, d.fd).find("another folder has its name"), std::string::npos);
  // Still the folder held: what is written goes there, not to the new one.
  EXPECT_TRUE(write_at(d.fd, "ready", "held\n"));
  EXPECT_EQ(read(d.path + ".moved/ready"), "held\n");
  EXPECT_EQ(access(d.at("ready").c_str(), F_OK), -1);
}

TEST(AgentFiles, WritesFollowNoLink) {
  Folder d;
  std::string outside = d.path + ".outside";
  std::ofstream(outside) << "precious";
  ASSERT_EQ(symlink(outside.c_str(), d.at("exit-0.tmp").c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), d.at("beat").c_str()), 0);
  EXPECT_TRUE(write_at(d.fd, "exit-0", "123 0\n"));
  EXPECT_EQ(read(d.at("exit-0")), "123 0\n");
  EXPECT_FALSE(rewrite_at(d.fd, "beat", "1\n"));
  EXPECT_EQ(read(outside), "precious");
  d.file("pid-1", "0000000000");
  EXPECT_TRUE(rewrite_at(d.fd, "pid-1", "42"));
  EXPECT_EQ(read(d.at("pid-1")), "4200000000");
}
