#include "aio.hpp"

#include <linux/aio_abi.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace rooftop::storage {

AioQueue::AioQueue(unsigned depth) {
  aio_context_t ctx = 0;
  if (syscall(SYS_io_setup, depth, &ctx) != 0)
    throw std::runtime_error(std::string("io_setup: ") + std::strerror(errno));
  ctx_ = ctx;
  efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd_ < 0) {
    const int e = errno;
    syscall(SYS_io_destroy, ctx_);
    throw std::runtime_error(std::string("eventfd: ") + std::strerror(e));
  }
}

AioQueue::~AioQueue() {
  syscall(SYS_io_destroy, ctx_);
  if (efd_ >= 0) close(efd_);
}

bool AioQueue::write(int fd, const void* buf, uint64_t n, uint64_t off, uint64_t tag) {
  iocb cb{};
  cb.aio_data = tag;
  cb.aio_lio_opcode = IOCB_CMD_PWRITE;
  cb.aio_fildes = static_cast<uint32_t>(fd);
  cb.aio_buf = reinterpret_cast<uint64_t>(buf);
  cb.aio_nbytes = n;
  cb.aio_offset = static_cast<int64_t>(off);
  cb.aio_flags = IOCB_FLAG_RESFD;
  cb.aio_resfd = static_cast<uint32_t>(efd_);
  iocb* list[1] = {&cb};
  long rc;
  do rc = syscall(SYS_io_submit, ctx_, 1, list);
  while (rc < 0 && errno == EINTR);
  if (rc != 1) {
    if (rc == 0) errno = EAGAIN;
    return false;
  }
  in_flight_++;
  return true;
}

size_t AioQueue::reap(std::vector<Done>& out, int64_t timeout_ns) {
  if (in_flight_ == 0) return 0;
  io_event ev[16];
  timespec limit{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  long n;
  do n = syscall(SYS_io_getevents, ctx_, timeout_ns ? 1 : 0, 16, ev, &limit);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  for (long i = 0; i < n; i++) out.push_back({ev[i].data, ev[i].res});
  in_flight_ -= static_cast<size_t>(n);
  return static_cast<size_t>(n);
}

}  // namespace rooftop::storage
