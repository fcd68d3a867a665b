// load --window-log FILE: one JSON line per event of the measurement (its
// start, each window the clock leaves, its end), appended while it runs, so
// that a campaign can show progress per window rather than per process.
//
// Why a file written by a thread of its own:
// - a file, not a pipe: a reader that dies or stops reading can never make
//   the writer wait (a full pipe blocks its writer; a file does not), it
//   works the same under mpiexec and srun on other hosts (the round's
//   folder is shared as the --output documents are), and what was written
//   stays on record next to the client documents;
// - a thread, not the measuring loop: opening, appending and closing can
//   still stall (a slow or hung network file system, a FIFO given as the
//   path), and a stall inside the loop would delay the responses of the next
//   window. push() only queues a line under a mutex the writer holds just to
//   take the queue; the writer opens the file non-blocking (a FIFO without a
//   reader is refused, a full one drops lines) and closes it after each
//   batch (close-to-open: an NFS reader on another host sees the lines).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace rooftop {

class WindowLog {
 public:
  // An empty path: nothing is written, push() does nothing.
  explicit WindowLog(std::string path);
  ~WindowLog();
  WindowLog(const WindowLog&) = delete;
  WindowLog& operator=(const WindowLog&) = delete;

  // Queues one line (without its newline). Never waits for I/O.
  void push(std::string line);
  // Writes what is queued and stops the writer, waiting at most wait_s for
  // it (a hung file system: it is left behind, detached). True when every
  // line was written.
  bool close(double wait_s);
  // Lines that could not be written (the path could not be opened, a full
  // FIFO), and the first reason.
  uint64_t dropped() const;
  std::string error() const;

  struct State;

 private:
  std::shared_ptr<State> st_;
};

}  // namespace rooftop
