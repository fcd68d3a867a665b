#include "window_work.hpp"

#include <algorithm>
#include <cmath>

namespace rooftop {

void WindowWork::start(int64_t t0, int64_t duration_ns, int64_t nwindows, int64_t nslices) {
  t0_ = t0;
  duration_ns_ = std::max<int64_t>(1, duration_ns);
  nslices_ = std::max<int64_t>(1, nslices);
  const auto n = static_cast<size_t>(std::max<int64_t>(0, nwindows));
  t_end_ = t0_ + static_cast<int64_t>(n) * duration_ns_;
  len_ = static_cast<double>(duration_ns_) / static_cast<double>(nslices_);
  completions_.assign(n, 0);
  whole_window_.assign(n, 0);
  frac_window_.assign(n, 0.0);
  whole_slice_.assign(n * static_cast<size_t>(nslices_), 0);
  frac_slice_.assign(n * static_cast<size_t>(nslices_), 0.0);
  lo_ = hi_ = 0;
  if (n) cache(0);
}

// The share computation, for every operation alike (add_slow's loop) gives
// an operation with offsets a = t_issue - t0 and b = t_resp - t0 (0 <= a <
// b, no clipping) exactly 1 in slice g when a and b - 1 fall in g
// (floor(x / len) == g, as the loop computes it, in doubles) and g*len <=
// a, b <= (g+1)*len (the piece inside g is then all of it). Each condition
// holds over one range of integers: lo is the least a and hi - 1 the
// greatest b meeting them, within the window of g so that the completion
// is counted there too.
void WindowWork::cache(int64_t g) {
  const int64_t k = g / nslices_;
  const double glo = static_cast<double>(g) * len_, ghi = static_cast<double>(g + 1) * len_;
  const auto slice_of = [&](int64_t x) { return static_cast<int64_t>(static_cast<double>(x) / len_); };
  int64_t lo = std::max(k * duration_ns_, static_cast<int64_t>(std::floor(glo)) - 2);
  while (!(slice_of(lo) >= g && static_cast<double>(lo) >= glo)) lo++;
  int64_t b = static_cast<int64_t>(std::floor(ghi)) + 2;
  while (!(slice_of(b - 1) <= g && static_cast<double>(b) <= ghi)) b--;
  const int64_t hi = std::min(b + 1, (k + 1) * duration_ns_);
  cur_ = static_cast<size_t>(g);
  cur_window_ = static_cast<size_t>(k);
  lo_ = t0_ + lo;
  hi_ = std::max(t0_ + hi, lo_);  // a slice shorter than 2 ns: never the fast path
}

void WindowWork::add_slow(int64_t t_issue, int64_t t_resp) {
  if (!started() || t_resp <= t0_ || t_issue >= t_end_) return;
  const int64_t n = windows();
  if (t_resp < t_end_) completions_[static_cast<size_t>(std::clamp<int64_t>((t_resp - t0_) / duration_ns_, 0, n - 1))]++;
  // Slices in time since t0_: window k is slices k*S .. k*S+S-1.
  const int64_t ns = n * nslices_;
  const double life = static_cast<double>(t_resp - t_issue);
  const double a = static_cast<double>(std::max(t_issue, t0_) - t0_);
  const double b = static_cast<double>(std::min(t_resp, t_end_) - t0_);
  const int64_t g0 = std::clamp<int64_t>(static_cast<int64_t>(a / len_), 0, ns - 1);
  const int64_t g1 = std::clamp<int64_t>(static_cast<int64_t>(std::max(a, b - 1) / len_), 0, ns - 1);
  for (int64_t g = g0; g <= g1; g++) {
    const double lo = std::max(a, static_cast<double>(g) * len_), hi = std::min(b, static_cast<double>(g + 1) * len_);
    const double share = life > 0 ? std::max(0.0, hi - lo) / life : (g == g0 ? 1.0 : 0.0);
    if (share <= 0) continue;
    const auto s = static_cast<size_t>(g), w = static_cast<size_t>(g / nslices_);
    if (share == 1.0) {
      whole_slice_[s]++;
      whole_window_[w]++;
    } else {
      frac_slice_[s] += share;
      frac_window_[w] += share;
    }
  }
  if (g1 != static_cast<int64_t>(cur_)) cache(g1);  // the next operations end near this one
}

double WindowWork::work(int64_t k) const {
  const auto i = static_cast<size_t>(k);
  return static_cast<double>(whole_window_[i]) + frac_window_[i];
}

double WindowWork::slice(int64_t k, int64_t j) const {
  const auto i = static_cast<size_t>(k * nslices_ + j);
  return static_cast<double>(whole_slice_[i]) + frac_slice_[i];
}

}  // namespace rooftop
