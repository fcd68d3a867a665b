// Address files: one publisher per rank, stale files told apart from live
// holders, and a server withdrawing only its own file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "addrfile.hpp"
#include "fabric.hpp"
#include "sysinfo.hpp"

using namespace rooftop;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/rooftop-addr-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

ServerAddress me(int rank) {
  ServerAddress a;
  a.rank = rank;
  a.provider = "tcp;ofi_rxm";
  a.raw = std::string("\x02\x00\x30\x39\x7f\x00\x00\x01", 8);
  fill_owner(a);
  return a;
}

int64_t dead_pid() {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, nullptr, 0);
  return p;
}

int error_code(const std::function<void()>& f, std::string* msg) {
  try {
    f();
  } catch (const EngineError& e) {
    *msg = e.what();
    return e.code;
  }
  return 0;
}

}  // namespace

TEST(AddrFile, FileNamesItsPublisher) {
  TempDir d;
  write_address(d.path, me(0));
  ServerAddress r = read_address(addr_path(d.path, 0));
  EXPECT_EQ(r.pid, getpid());
  EXPECT_EQ(r.host, hostname());
  EXPECT_GT(r.start, 0u);
  EXPECT_FALSE(r.boot.empty());
  EXPECT_EQ(holder_state(r).state, Holder::Live);
}

TEST(AddrFile, SecondPublisherOfALiveRankIsRefused) {
  TempDir d;
  write_address(d.path, me(0));
  ServerAddress other = me(0);
  other.text = "the second one";
  std::string msg;
  EXPECT_EQ(error_code([&] { write_address(d.path, other); }, &msg), kExitUsage);
  EXPECT_NE(msg.find("pid " + std::to_string(getpid())), std::string::npos) << msg;
  EXPECT_NE(msg.find(hostname()), std::string::npos) << msg;
  EXPECT_EQ(read_address(addr_path(d.path, 0)).text, "");  // the first file is intact
}

TEST(AddrFile, FileOfADeadProcessIsReplacedAndSaysSo) {
  TempDir d;
  ServerAddress gone = me(3);
  gone.pid = dead_pid();
  write_address(d.path, gone);
  Published p = write_address(d.path, me(3));
  EXPECT_TRUE(p.replaced);
  EXPECT_EQ(p.previous.pid, gone.pid);
  EXPECT_NE(p.why.find("is gone"), std::string::npos) << p.why;
  EXPECT_EQ(read_address(addr_path(d.path, 3)).pid, getpid());
}

TEST(AddrFile, ReusedPidIsStale) {
  TempDir d;
  ServerAddress reused = me(1);
  reused.start += 1;  // same pid, another process start
  write_address(d.path, reused);
  HolderState h = holder_state(read_address(addr_path(d.path, 1)));
  EXPECT_EQ(h.state, Holder::Dead);
  EXPECT_NE(h.why.find("another process"), std::string::npos) << h.why;
  EXPECT_TRUE(write_address(d.path, me(1)).replaced);
}

TEST(AddrFile, HolderOnAnotherHostIsNotReplaced) {
  TempDir d;
  ServerAddress far = me(2);
  far.host = "elsewhere.example";
  write_address(d.path, far);
  std::string msg;
  EXPECT_EQ(error_code([&] { write_address(d.path, me(2)); }, &msg), kExitUsage);
  EXPECT_NE(msg.find("elsewhere.example"), std::string::npos) << msg;
}

TEST(AddrFile, ServerWithdrawsOnlyItsOwnFile) {
  TempDir d;
  ServerAddress gone = me(0);
  gone.pid = dead_pid();
  write_address(d.path, gone);
  ServerAddress mine = me(0);
  write_address(d.path, mine);  // replaces the stale one
  EXPECT_FALSE(withdraw_address(d.path, gone));
  EXPECT_EQ(access(addr_path(d.path, 0).c_str(), F_OK), 0);
  EXPECT_TRUE(withdraw_address(d.path, mine));
  EXPECT_NE(access(addr_path(d.path, 0).c_str(), F_OK), 0);
}

TEST(AddrFile, FileWithoutOwnerLineStillReads) {
  TempDir d;
  std::ofstream(addr_path(d.path, 0)) << "version=1\nrank=0\nprovider=tcp\naddr=0200\nhost="
                                      << hostname() << "\npid=" << getpid() << "\n";
  ServerAddress r = read_address(addr_path(d.path, 0));
  EXPECT_EQ(r.start, 0u);
  EXPECT_EQ(holder_state(r).state, Holder::Live);
}

TEST(AddrFile, ClientFailsAtOnceOnAStaleFile) {
  TempDir d;
  ServerAddress gone = me(0);
  gone.pid = dead_pid();
  write_address(d.path, gone);
  auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  EXPECT_EQ(error_code([&] { wait_address(d.path, 0, 30); }, &msg), kExitUnreachable);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(msg.find("pid " + std::to_string(gone.pid) + " is gone"), std::string::npos) << msg;
}
