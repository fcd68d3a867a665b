/* stream_ref: the streaming limit of moving fresh slices of a large buffer
 * between two processes on this machine, the reference for
 * `rooftop-engine load --op read --buffer stream` (engine_vs_reference.py,
 * rows 3s and 4s).
 *
 * One process pair: the copier (on the server's core) and the holder of
 * the region (on the client's core). The region (default 1 GiB) and the
 * copier's slice buffer (default 4 MiB) are mapped as the engine maps its
 * buffers (anonymous, MAP_POPULATE: resident, base pages) and written once
 * before measuring. Every transfer goes to the next slice of the region,
 * wrapping at its end: the region is far larger than any cache, so each
 * slice arrives cold, as each of the engine's does.
 *
 *   --mode push  the copier writes its slice buffer into the holder's next
 *                slice with process_vm_writev: the copy the shm provider
 *                does for the engine's read (the server's fi_write of 4 MiB
 *                is one process_vm_writev from its slot into the client's
 *                buffer; seen with strace).
 *   --mode pull  the copier reads the holder's next slice into its buffer
 *                with process_vm_readv (the engine's write: the server's
 *                fi_read).
 *   --mode tcp   the copier sends its slice buffer over a loopback TCP
 *                connection without pause, the holder receives into its
 *                next slice: a plain socket stream with the engine's
 *                destination.
 *
 * After --warmup seconds, transfers are counted for --seconds; prints one
 * JSON object: {"mode", "bytes", "seconds", "bytes_per_sec", "slices",
 * "slice_bytes", "region_bytes"}. Exit 0, or 1 with a message on stderr.
 * Plain C (POSIX, Linux); built by engine_vs_reference.py with the system
 * compiler: cc -O2 -o stream_ref stream_ref.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char* what) {
  fprintf(stderr, "stream_ref: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity");
}

/* Resident anonymous memory, written once (as the engine's alloc_resident). */
static uint8_t* resident(size_t len) {
  void* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) die("mmap");
  memset(p, 0x5a, len);
  return p;
}

static int write_all(int fd, const void* p, size_t n) {
  const uint8_t* b = p;
  while (n) {
    ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k;
    n -= (size_t)k;
  }
  return 0;
}

static int read_all(int fd, void* p, size_t n) {
  uint8_t* b = p;
  while (n) {
    ssize_t k = read(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k;
    n -= (size_t)k;
  }
  return 0;
}

struct cfg {
  const char* mode;
  size_t slice, region;
  double seconds, warmup;
  int copier_cpu, holder_cpu;
};

static void report(const struct cfg* c, uint64_t bytes, uint64_t slices, double t) {
  printf("{\"mode\": \"%s\", \"bytes\": %llu, \"seconds\": %.6f, \"bytes_per_sec\": %.1f, \"slices\": %llu, "
         "\"slice_bytes\": %zu, \"region_bytes\": %zu}\n",
         c->mode, (unsigned long long)bytes, t, t > 0 ? (double)bytes / t : 0.0, (unsigned long long)slices,
         c->slice, c->region);
  fflush(stdout);
}

/* push / pull: the holder maps the region and sends its address, then waits
 * until the copier closes the control pipe. */
static int run_cma(const struct cfg* c, int push) {
  int addr_pipe[2], done_pipe[2];
  if (pipe(addr_pipe) || pipe(done_pipe)) die("pipe");
  pid_t holder = fork();
  if (holder < 0) die("fork");
  if (holder == 0) {
    close(addr_pipe[0]);
    close(done_pipe[1]);
    pin(c->holder_cpu);
    uint8_t* region = resident(c->region);
    uintptr_t a = (uintptr_t)region;
    if (write_all(addr_pipe[1], &a, sizeof a)) _exit(1);
    char x;
    while (read(done_pipe[0], &x, 1) > 0) {
    }
    _exit(0);
  }
  close(addr_pipe[1]);
  close(done_pipe[0]);
  pin(c->copier_cpu);
  uint8_t* buf = resident(c->slice);
  uintptr_t region = 0;
  if (read_all(addr_pipe[0], &region, sizeof region)) {
    fprintf(stderr, "stream_ref: the holder process did not start (out of memory?)\n");
    return 1;
  }
  const size_t nslices = c->region / c->slice;
  size_t next = 0;
  uint64_t bytes = 0, slices = 0;
  const double t_start = now_s(), t0 = t_start + c->warmup, t_end = t0 + c->seconds;
  double t = t_start, t_first = 0;
  int measuring = 0;
  while (t < t_end) {
    struct iovec local = {buf, c->slice};
    struct iovec remote = {(void*)(region + next * c->slice), c->slice};
    ssize_t n = push ? process_vm_writev(holder, &local, 1, &remote, 1, 0)
                     : process_vm_readv(holder, &local, 1, &remote, 1, 0);
    if (n != (ssize_t)c->slice) {
      fprintf(stderr, "stream_ref: %s returned %zd of %zu bytes: %s\n",
              push ? "process_vm_writev" : "process_vm_readv", n, c->slice, strerror(errno));
      close(done_pipe[1]);
      waitpid(holder, NULL, 0);
      return 1;
    }
    next = next + 1 == nslices ? 0 : next + 1;
    t = now_s();
    if (measuring) {
      bytes += (uint64_t)n;
      slices++;
    } else if (t >= t0) {
      measuring = 1;  /* counting starts with the next transfer */
      t_first = t;
    }
  }
  close(done_pipe[1]);
  waitpid(holder, NULL, 0);
  report(c, bytes, slices, measuring ? t - t_first : 0);
  return 0;
}

/* tcp: the holder listens on loopback, receives into its next slice; the
 * copier connects and sends until the holder closes. The holder measures. */
static int run_tcp(const struct cfg* c) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (lfd < 0) die("socket");
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, (struct sockaddr*)&sa, sizeof sa) || listen(lfd, 1)) die("bind/listen");
  socklen_t sl = sizeof sa;
  if (getsockname(lfd, (struct sockaddr*)&sa, &sl)) die("getsockname");
  pid_t sender = fork();
  if (sender < 0) die("fork");
  if (sender == 0) {  /* the copier: sends */
    close(lfd);
    pin(c->copier_cpu);
    signal(SIGPIPE, SIG_IGN);
    uint8_t* buf = resident(c->slice);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr*)&sa, sizeof sa)) _exit(1);
    for (;;) {
      size_t off = 0;
      while (off < c->slice) {
        ssize_t k = send(fd, buf + off, c->slice - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) _exit(0);  /* the holder closed: done */
        off += (size_t)k;
      }
    }
  }
  pin(c->holder_cpu);
  uint8_t* region = resident(c->region);
  /* Every wait has a limit: the sender connects within 10 s, and no
   * receive waits longer than 10 s. */
  struct pollfd pl = {lfd, POLLIN, 0};
  if (poll(&pl, 1, 10000) != 1) {
    fprintf(stderr, "stream_ref: the sender did not connect within 10 s\n");
    kill(sender, SIGTERM);
    waitpid(sender, NULL, 0);
    return 1;
  }
  int fd = accept(lfd, NULL, NULL);
  if (fd < 0) die("accept");
  close(lfd);
  struct timeval limit = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  const size_t nslices = c->region / c->slice;
  size_t next = 0;
  uint64_t bytes = 0, slices = 0;
  const double t_start = now_s(), t0 = t_start + c->warmup, t_end = t0 + c->seconds;
  double t = t_start, t_first = 0;
  int measuring = 0;
  while (t < t_end) {
    uint8_t* dst = region + next * c->slice;
    size_t off = 0;
    while (off < c->slice) {
      ssize_t k = recv(fd, dst + off, c->slice - off, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        fprintf(stderr, "stream_ref: the sender stopped: %s\n", k < 0 ? strerror(errno) : "connection closed");
        close(fd);
        kill(sender, SIGTERM);
        waitpid(sender, NULL, 0);
        return 1;
      }
      off += (size_t)k;
    }
    next = next + 1 == nslices ? 0 : next + 1;
    t = now_s();
    if (measuring) {
      bytes += c->slice;
      slices++;
    } else if (t >= t0) {
      measuring = 1;
      t_first = t;
    }
  }
  close(fd);
  waitpid(sender, NULL, 0);
  report(c, bytes, slices, measuring ? t - t_first : 0);
  return 0;
}

static size_t size_arg(const char* s, const char* name) {
  char* end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) goto bad;
  if (*end == 'K') v <<= 10, end++;
  else if (*end == 'M') v <<= 20, end++;
  else if (*end == 'G') v <<= 30, end++;
  if (*end == 'i' && end[1] == 'B') end += 2;
  if (*end == '\0' && v > 0) return (size_t)v;
bad:
  fprintf(stderr, "stream_ref: %s '%s': expected bytes, e.g. 4MiB\n", name, s);
  exit(2);
}

int main(int argc, char** argv) {
  struct cfg c = {"push", 4u << 20, 1u << 30, 3.0, 0.5, -1, -1};
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "stream_ref: %s needs a value\n", a);
      return 2;
    }
    if (!strcmp(a, "--mode")) c.mode = v;
    else if (!strcmp(a, "--slice")) c.slice = size_arg(v, a);
    else if (!strcmp(a, "--region")) c.region = size_arg(v, a);
    else if (!strcmp(a, "--seconds")) c.seconds = atof(v);
    else if (!strcmp(a, "--warmup")) c.warmup = atof(v);
    else if (!strcmp(a, "--copier-cpu")) c.copier_cpu = atoi(v);
    else if (!strcmp(a, "--holder-cpu")) c.holder_cpu = atoi(v);
    else {
      fprintf(stderr, "stream_ref: unknown option %s (--mode push|pull|tcp, --slice, --region, --seconds, "
                      "--warmup, --copier-cpu, --holder-cpu)\n", a);
      return 2;
    }
    i++;
  }
  if (c.region < c.slice || c.seconds <= 0 || c.warmup < 0) {
    fprintf(stderr, "stream_ref: need --region >= --slice, --seconds > 0, --warmup >= 0\n");
    return 2;
  }
  if (!strcmp(c.mode, "push")) return run_cma(&c, 1);
  if (!strcmp(c.mode, "pull")) return run_cma(&c, 0);
  if (!strcmp(c.mode, "tcp")) return run_tcp(&c);
  fprintf(stderr, "stream_ref: --mode '%s': push, pull or tcp\n", c.mode);
  return 2;
}
