// The work of a load run's operations in its measured windows (load
// --windows) and in each window's --slices slices: an operation counts in a
// window or slice by the share of its lifetime [issue, response] inside it
// (counting whole completions would credit a window with work done before
// it opened), and its completion in the window its response arrived in.
//
// Batched for the per-operation path: nearly every operation lies inside
// one slice, where its share is exactly 1, so add() first checks the slice
// the last operation ended in against integer bounds computed once per
// slice, and counts the operation there as a whole one (one integer
// increment). Only an operation that straddles a slice edge, or lies in
// another slice, takes the share computation, whose fractions are summed
// apart. A slice's work is its whole operations plus its fractions: the
// same shares as computing every operation alike (tests/test_window_work.cpp
// checks it against that computation), with the whole counts exact.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rooftop {

class WindowWork {
 public:
  // Windows [t0 + k*duration_ns, t0 + (k+1)*duration_ns), k < nwindows,
  // each cut into nslices slices of equal length. Clears all counts.
  void start(int64_t t0, int64_t duration_ns, int64_t nwindows, int64_t nslices);
  bool started() const { return !completions_.empty(); }

  // An operation issued at t_issue that completed at t_resp (ok).
  void add(int64_t t_issue, int64_t t_resp) {
    if (t_issue >= lo_ && t_resp < hi_ && t_resp > t_issue) {
      whole_slice_[cur_]++;
      whole_window_[cur_window_]++;
      completions_[cur_window_]++;
      return;
    }
    add_slow(t_issue, t_resp);
  }

  int64_t windows() const { return static_cast<int64_t>(completions_.size()); }
  int64_t slices_per_window() const { return nslices_; }
  // Operations completed inside window k (its response time in it).
  uint64_t completions(int64_t k) const { return completions_[static_cast<size_t>(k)]; }
  // Shares of operations in window k, and in slice j of window k.
  double work(int64_t k) const;
  double slice(int64_t k, int64_t j) const;

 private:
  void add_slow(int64_t t_issue, int64_t t_resp);
  // Makes slice g the cached one: lo_ and hi_ become the absolute times
  // between which an operation is credited to it in full by the fast path.
  void cache(int64_t g);

  int64_t t0_ = 0, t_end_ = 0, duration_ns_ = 1, nslices_ = 1;
  double len_ = 1;  // slice length in ns
  std::vector<uint64_t> whole_slice_, whole_window_, completions_;
  std::vector<double> frac_slice_, frac_window_;
  // The cached slice: an operation with lo_ <= t_issue < t_resp < hi_ lies
  // inside slice cur_ of window cur_window_ (and completes in it).
  int64_t lo_ = 0, hi_ = 0;  // empty until start()
  size_t cur_ = 0, cur_window_ = 0;
};

}  // namespace rooftop
