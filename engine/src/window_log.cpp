#include "window_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace rooftop {

// Shared by the owner and the writer thread: a writer left behind by close()
// keeps it alive after the owner is gone.
struct WindowLog::State {
  std::string path;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> queue;
  bool closing = false, finished = false;
  uint64_t dropped = 0;
  std::string error;
  std::thread writer;

  // One batch: open, append every line, close. Returns how many were lost.
  size_t write_batch(const std::vector<std::string>& lines, std::string& why) {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
      why = "--window-log " + path + ": " + std::strerror(errno);
      return lines.size();
    }
    size_t lost = 0;
    for (const auto& l : lines) {
      std::string text = l + "\n";
      ssize_t n = ::write(fd, text.data(), text.size());  // O_APPEND: one write, one whole line
      if (n != static_cast<ssize_t>(text.size())) {
        if (why.empty()) why = "--window-log " + path + ": " + (n < 0 ? std::strerror(errno) : "short write");
        lost++;
      }
    }
    ::close(fd);
    return lost;
  }

  void run() {
    std::unique_lock lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return closing || !queue.empty(); });
      if (queue.empty()) break;  // closing, and everything written
      std::vector<std::string> batch;
      batch.swap(queue);
      lk.unlock();
      std::string why;
      size_t lost = write_batch(batch, why);
      lk.lock();
      dropped += lost;
      if (error.empty()) error = why;
    }
    finished = true;
    cv.notify_all();
  }
};

WindowLog::WindowLog(std::string path) {
  if (path.empty()) return;
  st_ = std::make_shared<State>();
  st_->path = std::move(path);
  st_->writer = std::thread([st = st_] { st->run(); });
}

WindowLog::~WindowLog() { close(1.0); }

void WindowLog::push(std::string line) {
  if (!st_) return;
  {
    std::lock_guard lk(st_->mu);
    if (st_->closing) return;
    st_->queue.push_back(std::move(line));
  }
  st_->cv.notify_one();
}

bool WindowLog::close(double wait_s) {
  if (!st_) return true;
  if (!st_->writer.joinable()) return dropped() == 0;  // closed before
  std::unique_lock lk(st_->mu);
  st_->closing = true;
  st_->cv.notify_all();
  bool done = st_->cv.wait_for(lk, std::chrono::duration<double>(wait_s), [&] { return st_->finished; });
  if (!done) {
    st_->dropped += st_->queue.size();
    if (st_->error.empty()) st_->error = "--window-log " + st_->path + ": still writing after the measurement";
  }
  lk.unlock();
  if (done)
    st_->writer.join();
  else
    st_->writer.detach();  // it owns a reference to the state: safe to outlive us
  return done && st_->dropped == 0;
}

uint64_t WindowLog::dropped() const {
  if (!st_) return 0;
  std::lock_guard lk(st_->mu);
  return st_->dropped;
}

std::string WindowLog::error() const {
  if (!st_) return "";
  std::lock_guard lk(st_->mu);
  return st_->error;
}

}  // namespace rooftop
