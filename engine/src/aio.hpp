// Linux native asynchronous I/O (io_setup, io_submit, io_getevents; raw
// system calls, no library): the server's inline mode submits a put's
// O_DIRECT write and goes on progressing the network while the device
// writes it (server.cpp, submit_io). Each completion also signals an
// eventfd (IOCB_FLAG_RESFD), so a loop with nothing else to do can sleep
// on it. With O_DIRECT on a file system that honours it, io_submit returns
// once the write is queued at the device; a file opened with O_SYNC or
// O_DSYNC completes only once the write is durable (the kernel runs the
// sync before it posts the event).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rooftop::storage {

class AioQueue {
 public:
  // Room for `depth` writes in flight. Throws std::runtime_error (with the
  // system's reason) where the kernel refuses (fs.aio-max-nr exhausted).
  explicit AioQueue(unsigned depth);
  ~AioQueue();  // waits for the writes in flight (io_destroy does)
  AioQueue(const AioQueue&) = delete;
  AioQueue& operator=(const AioQueue&) = delete;

  // Queues a write of n bytes of buf at off; false (errno set) if refused.
  bool write(int fd, const void* buf, uint64_t n, uint64_t off, uint64_t tag);

  struct Done {
    uint64_t tag;
    int64_t result;  // bytes written, or -errno
  };
  // Completed writes, appended to out; waits up to timeout_ns for at least
  // one (0: does not wait). Returns how many were appended.
  size_t reap(std::vector<Done>& out, int64_t timeout_ns = 0);

  size_t in_flight() const { return in_flight_; }
  int event_fd() const { return efd_; }

 private:
  unsigned long ctx_ = 0;  // aio_context_t
  int efd_ = -1;
  size_t in_flight_ = 0;
};

}  // namespace rooftop::storage
