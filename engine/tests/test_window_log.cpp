// Unit tests for load --window-log (window_log.hpp): lines reach the file
// while the writer runs, and nothing a reader does (or fails to do) makes
// push() or close() wait.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "window_log.hpp"

using namespace rooftop;
using Clock = std::chrono::steady_clock;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/rooftop-wlog-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

TEST(WindowLog, LinesReachTheFileWhileRunning) {
  TempDir d;
  const std::string path = d.path + "/windows-0.jsonl";
  WindowLog log(path);
  log.push(R"({"event":"window","window":0})");
  // Before close(): the campaign follows the file during the measurement.
  auto t0 = Clock::now();
  while (read_all(path).empty() && seconds_since(t0) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(read_all(path), "{\"event\":\"window\",\"window\":0}\n");
  log.push(R"({"event":"window","window":1})");
  EXPECT_TRUE(log.close(5));
  EXPECT_EQ(read_all(path), "{\"event\":\"window\",\"window\":0}\n{\"event\":\"window\",\"window\":1}\n");
  EXPECT_EQ(log.dropped(), 0u);
  log.push("after close");  // ignored
  EXPECT_TRUE(log.close(5));
  EXPECT_EQ(read_all(path).find("after close"), std::string::npos);
}

TEST(WindowLog, NoPathWritesNothing) {
  WindowLog log("");
  log.push("x");
  EXPECT_TRUE(log.close(1));
  EXPECT_EQ(log.dropped(), 0u);
  EXPECT_EQ(log.error(), "");
}

TEST(WindowLog, AnUnwritablePathDropsLinesAndSaysWhy) {
  WindowLog log("/nonexistent-dir/windows-0.jsonl");
  log.push("a");
  log.push("b");
  EXPECT_FALSE(log.close(5));
  EXPECT_EQ(log.dropped(), 2u);
  EXPECT_NE(log.error().find("/nonexistent-dir/windows-0.jsonl"), std::string::npos) << log.error();
}

// A FIFO nobody opened for reading: a blocking open would wait forever.
TEST(WindowLog, AFifoWithoutReaderNeverBlocks) {
  TempDir d;
  const std::string path = d.path + "/fifo";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto t0 = Clock::now();
  WindowLog log(path);
  for (int i = 0; i < 1000; i++) log.push("line");
  EXPECT_FALSE(log.close(5));
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(log.dropped(), 1000u);
}

// A reader that opened the FIFO and never reads: the pipe fills (64 KiB);
// pushing goes on at full speed, the lines that do not fit are dropped.
TEST(WindowLog, AReaderThatNeverReadsNeverSlowsPush) {
  TempDir d;
  const std::string path = d.path + "/fifo";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  int reader = open(path.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  WindowLog log(path);
  const std::string line(200, 'x');
  auto t0 = Clock::now();
  for (int i = 0; i < 20000; i++) log.push(line);  // 4 MB: 60 times the pipe
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_FALSE(log.close(5));
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_GT(log.dropped(), 0u);
  EXPECT_LT(log.dropped(), 20000u);
  close(reader);
}
