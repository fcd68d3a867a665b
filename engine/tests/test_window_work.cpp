// Unit tests for the load driver's window accounting (window_work.hpp): the
// batched counting (whole operations inside the cached slice, shares
// elsewhere) gives every window and slice the work and completions that
// crediting each operation by its share gives (the computation the driver
// did per operation before, kept here as the reference), and whole
// operations stay exact integers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "window_work.hpp"

using rooftop::WindowWork;

namespace {

// Every operation by its share, in doubles, one after the other.
struct Reference {
  int64_t t0, dur, n, ns_per;
  std::vector<double> work, slices;
  std::vector<uint64_t> completions;
  Reference(int64_t t0_, int64_t dur_, int64_t n_, int64_t s)
      : t0(t0_), dur(dur_), n(n_), ns_per(s), work(n_), slices(n_ * s), completions(n_) {}
  void add(int64_t t_issue, int64_t t_resp) {
    const int64_t t_end = t0 + n * dur;
    if (t_resp <= t0 || t_issue >= t_end) return;
    const double life = static_cast<double>(t_resp - t_issue);
    if (t_resp < t_end) completions[std::clamp<int64_t>((t_resp - t0) / dur, 0, n - 1)]++;
    const int64_t ns = n * ns_per;
    const double len = static_cast<double>(dur) / static_cast<double>(ns_per);
    const double a = static_cast<double>(std::max(t_issue, t0) - t0);
    const double b = static_cast<double>(std::min(t_resp, t_end) - t0);
    const int64_t g0 = std::clamp<int64_t>(static_cast<int64_t>(a / len), 0, ns - 1);
    const int64_t g1 = std::clamp<int64_t>(static_cast<int64_t>(std::max(a, b - 1) / len), 0, ns - 1);
    for (int64_t g = g0; g <= g1; g++) {
      double lo = std::max(a, g * len), hi = std::min(b, (g + 1) * len);
      double share = life > 0 ? std::max(0.0, hi - lo) / life : (g == g0 ? 1.0 : 0.0);
      if (share <= 0) continue;
      slices[g] += share;
      work[g / ns_per] += share;
    }
  }
};

void expect_same(const WindowWork& w, const Reference& r) {
  ASSERT_EQ(w.windows(), r.n);
  for (int64_t k = 0; k < r.n; k++) {
    EXPECT_EQ(w.completions(k), r.completions[k]) << "window " << k;
    EXPECT_NEAR(w.work(k), r.work[k], 1e-9 * std::max(1.0, r.work[k])) << "window " << k;
    for (int64_t j = 0; j < r.ns_per; j++) {
      const double want = r.slices[k * r.ns_per + j];
      EXPECT_NEAR(w.slice(k, j), want, 1e-9 * std::max(1.0, want)) << "window " << k << " slice " << j;
    }
  }
}

struct Layout {
  int64_t t0, dur, windows, slices;
};
// Whole slice lengths, lengths that are no whole number of ns, slices
// shorter than a nanosecond, a large monotonic clock value.
const Layout kLayouts[] = {{1'000'000, 1'000'000, 3, 20},
                           {123'456'789'012'345, 1'000'000'007, 2, 7},
                           {5'000, 10, 4, 20},
                           {77, 999'983, 5, 3},
                           {0, 1'000, 1, 1}};

}  // namespace

// One operation after another (--concurrency 1), lifetimes from 0 to a few
// slices, starting before the first window and ending after the last.
TEST(WindowWork, SequentialMatchesShareByShare) {
  std::mt19937_64 rng(42);
  for (const Layout& l : kLayouts) {
    WindowWork w;
    w.start(l.t0, l.dur, l.windows, l.slices);
    Reference ref(l.t0, l.dur, l.windows, l.slices);
    const int64_t span = l.windows * l.dur;
    const int64_t step = std::max<int64_t>(1, span / 20000);
    std::uniform_int_distribution<int64_t> life(0, step * 2);
    std::uniform_int_distribution<int> rare(0, 999);
    int64_t t = l.t0 - span / 10;
    while (t < l.t0 + span + span / 10) {
      int64_t d = life(rng);
      if (rare(rng) == 0) d = l.dur / std::max<int64_t>(1, l.slices) * 3 + 1;  // over several slices
      w.add(t, t + d);
      ref.add(t, t + d);
      t += d;
    }
    SCOPED_TRACE(l.dur);
    expect_same(w, ref);
  }
}

// K operations outstanding: issue times out of order with response times,
// lifetimes that overlap.
TEST(WindowWork, OverlappingMatchesShareByShare) {
  std::mt19937_64 rng(7);
  for (const Layout& l : kLayouts) {
    WindowWork w;
    w.start(l.t0, l.dur, l.windows, l.slices);
    Reference ref(l.t0, l.dur, l.windows, l.slices);
    const int64_t span = l.windows * l.dur;
    std::uniform_int_distribution<int64_t> at(l.t0 - span / 5, l.t0 + span + span / 5);
    std::uniform_int_distribution<int64_t> life(0, std::max<int64_t>(1, span / 50));
    for (int i = 0; i < 20000; i++) {
      const int64_t a = at(rng), b = a + life(rng);
      w.add(a, b);
      ref.add(a, b);
    }
    SCOPED_TRACE(l.dur);
    expect_same(w, ref);
  }
}

// Operations that never straddle a slice edge count as whole ones: every
// slice's work is an exact integer, the number of operations inside it.
TEST(WindowWork, WholeOperationsAreExact) {
  WindowWork w;
  const int64_t t0 = 1'000'000'000, dur = 1'000'000;
  w.start(t0, dur, 2, 10);  // slices of 100 us
  uint64_t n = 0;
  for (int64_t s = 0; s < 20; s++)
    for (int64_t k = 0; k < 1000; k++) {  // 1000 operations of 90 ns inside each slice
      const int64_t a = t0 + s * 100'000 + k * 99 + 1;
      w.add(a, a + 90);
      n++;
    }
  for (int64_t k = 0; k < 2; k++) {
    EXPECT_EQ(w.completions(k), 10'000u);
    EXPECT_EQ(w.work(k), 10'000.0);
    for (int64_t j = 0; j < 10; j++) EXPECT_EQ(w.slice(k, j), 1000.0);
  }
  EXPECT_EQ(n, 20'000u);
}

// Nothing before the first window or after the last; an operation spanning
// a whole window is credited there by its share only, completed in none.
TEST(WindowWork, EdgesAndOutside) {
  WindowWork w;
  EXPECT_FALSE(w.started());
  w.add(1, 2);  // before start(): ignored
  w.start(1000, 100, 2, 4);
  EXPECT_TRUE(w.started());
  w.add(0, 1000);     // ends at the start: no share
  w.add(1200, 1300);  // begins at the end: none
  w.add(900, 1300);   // covers both windows: a quarter each (100 of its 400 ns)... and completes after
  EXPECT_EQ(w.completions(0), 0u);
  EXPECT_EQ(w.completions(1), 0u);
  EXPECT_DOUBLE_EQ(w.work(0), 0.25);
  EXPECT_DOUBLE_EQ(w.work(1), 0.25);
  for (int64_t j = 0; j < 4; j++) EXPECT_DOUBLE_EQ(w.slice(0, j), 0.0625);
  w.add(1010, 1010);  // no lifetime: whole, where it happened
  EXPECT_EQ(w.completions(0), 1u);
  EXPECT_DOUBLE_EQ(w.slice(0, 0), 1.0625);
}
