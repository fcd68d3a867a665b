// Unit tests for the log-linear latency histogram (histogram.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "histogram.hpp"

using rooftop::Histogram;

namespace {

// The value of the sample at quantile q of sorted data, with the same rank
// convention as Histogram::quantile (1-based rank ceil(q * n), at least 1).
uint64_t true_quantile(const std::vector<uint64_t>& sorted, double q) {
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(sorted.size())));
  if (rank == 0) rank = 1;
  return sorted[rank - 1];
}

const double kQuantiles[] = {0.0,  0.001, 0.01, 0.05, 0.1,  0.25,   0.333, 0.5,
                             0.75, 0.9,   0.95, 0.99, 0.999, 0.9999, 1.0};

// Largest value that still gets its own bucket: the top group covers
// [2^kMaxExp, 2^(kMaxExp+1)); anything larger clamps into the last bucket.
constexpr uint64_t kLargestBucketed = (uint64_t{1} << (Histogram::kMaxExp + 1)) - 1;

}  // namespace

TEST(Histogram, EmptyReturnsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  for (double q : kQuantiles) EXPECT_EQ(h.quantile(q), 0u) << q;
  // Reset brings a used histogram back to the same state.
  h.record(12345);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.quantile(0.5), 0u);
}

TEST(Histogram, ExactBelowSubBucketCount) {
  static_assert(Histogram::kSub == 128);
  for (uint64_t v = 0; v < 128; v++) {
    int b = Histogram::bucket_of(v);
    EXPECT_EQ(b, static_cast<int>(v));
    EXPECT_EQ(Histogram::bucket_low(b), v);
    EXPECT_EQ(Histogram::bucket_high(b), v + 1);
    Histogram one;
    one.record(v);
    EXPECT_EQ(one.quantile(0.5), v);
  }
  Histogram h;
  for (uint64_t v = 0; v < 128; v++) h.record(v);
  for (uint64_t v = 0; v < 128; v++)
    EXPECT_EQ(h.quantile((v + 1) / 128.0), v) << "q=" << (v + 1) / 128.0;
  EXPECT_EQ(h.quantile(0.0), 0u);
  EXPECT_EQ(h.quantile(-1.0), 0u);   // clamped to 0
  EXPECT_EQ(h.quantile(2.0), 127u);  // clamped to 1
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 127u);
  EXPECT_DOUBLE_EQ(h.mean(), 63.5);
}

TEST(Histogram, BucketsBracketEveryValue) {
  std::vector<uint64_t> values;
  for (uint64_t v = 0; v <= 20000; v++) values.push_back(v);
  std::mt19937_64 rng(1);
  for (int e = 7; e <= 50; e++) {
    uint64_t p = uint64_t{1} << e;
    for (uint64_t d : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}}) {
      values.push_back(p - 1 - d);
      values.push_back(p + d);
    }
    for (int i = 0; i < 2000; i++) values.push_back(p + rng() % p);
  }
  values.push_back(UINT64_MAX);
  std::sort(values.begin(), values.end());

  int prev = -1;
  for (uint64_t v : values) {
    int b = Histogram::bucket_of(v);
    ASSERT_GE(b, 0) << v;
    ASSERT_LT(b, Histogram::kBuckets) << v;
    ASSERT_GE(b, prev) << "bucket_of not monotonic at " << v;
    prev = b;
    if (v <= kLargestBucketed) {
      ASSERT_LE(Histogram::bucket_low(b), v) << v;
      ASSERT_LT(v, Histogram::bucket_high(b)) << v;
      // Bucket width relative to its low edge stays within 1/kSub.
      uint64_t lo = Histogram::bucket_low(b), hi = Histogram::bucket_high(b);
      if (lo >= static_cast<uint64_t>(Histogram::kSub)) {
        ASSERT_LE(static_cast<double>(hi - lo) / static_cast<double>(lo),
                  1.0 / Histogram::kSub)
            << v;
      }
    } else {
      ASSERT_EQ(b, Histogram::kBuckets - 1) << "value above range not clamped: " << v;
    }
  }
  // Buckets tile the range without gaps or overlaps.
  for (int b = 0; b + 1 < Histogram::kBuckets; b++)
    ASSERT_EQ(Histogram::bucket_high(b), Histogram::bucket_low(b + 1)) << b;
  EXPECT_EQ(Histogram::bucket_high(Histogram::kBuckets - 1), kLargestBucketed + 1);
  EXPECT_EQ(Histogram::bucket_of(kLargestBucketed), Histogram::kBuckets - 1);
  EXPECT_EQ(Histogram::bucket_of(uint64_t{1} << 48), 42 * Histogram::kSub);
}

TEST(Histogram, ValuesAboveRangeKeepExactMinMaxMean) {
  const uint64_t big = (uint64_t{1} << 50) + 12345;
  Histogram h;
  h.record(big);
  EXPECT_EQ(h.max(), big);
  EXPECT_EQ(h.min(), big);
  EXPECT_EQ(h.quantile(0.5), big);  // clamped to [min, max]
  h.record(UINT64_MAX);
  h.record(UINT64_MAX);
  EXPECT_EQ(h.max(), UINT64_MAX);
  EXPECT_EQ(h.min(), big);
  EXPECT_EQ(h.count(), 3u);
  // The sum does not overflow (128-bit accumulator).
  const double want = (static_cast<double>(big) + 2.0 * static_cast<double>(UINT64_MAX)) / 3.0;
  EXPECT_DOUBLE_EQ(h.mean(), want);
  // Quantiles stay within [min, max].
  for (double q : kQuantiles) {
    EXPECT_GE(h.quantile(q), h.min());
    EXPECT_LE(h.quantile(q), h.max());
  }
}

TEST(Histogram, UniformQuantilesWithinOnePercent) {
  Histogram h;
  const uint64_t n = 100000;
  // Record in a scrambled order: the result must not depend on it.
  std::vector<uint64_t> vals(n);
  for (uint64_t i = 0; i < n; i++) vals[i] = i + 1;
  std::shuffle(vals.begin(), vals.end(), std::mt19937_64(7));
  for (uint64_t v : vals) h.record(v);
  std::sort(vals.begin(), vals.end());

  EXPECT_EQ(h.count(), n);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), n);
  EXPECT_DOUBLE_EQ(h.mean(), 50000.5);
  for (double q : kQuantiles) {
    double want = static_cast<double>(true_quantile(vals, q));
    double got = static_cast<double>(h.quantile(q));
    EXPECT_NEAR(got, want, 0.01 * want) << "q=" << q;
  }
  for (int i = 1; i <= 1000; i++) {
    double q = i / 1000.0;
    double want = static_cast<double>(true_quantile(vals, q));
    ASSERT_NEAR(static_cast<double>(h.quantile(q)), want, 0.01 * want) << "q=" << q;
  }
  EXPECT_EQ(h.quantile(0.0), 1u);
  EXPECT_EQ(h.quantile(1.0), n);
}

TEST(Histogram, MinMaxMeanExact) {
  Histogram h;
  std::mt19937_64 rng(3);
  uint64_t mn = UINT64_MAX, mx = 0;
  long double sum = 0;
  const int n = 5000;
  for (int i = 0; i < n; i++) {
    uint64_t v = 1000 + rng() % 1000000007;
    h.record(v);
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  EXPECT_EQ(h.min(), mn);
  EXPECT_EQ(h.max(), mx);
  EXPECT_DOUBLE_EQ(h.mean(), static_cast<double>(sum / n));
  // Integer-exact case.
  Histogram g;
  for (uint64_t v : {3u, 5u, 1000001u, 7u}) g.record(v);
  EXPECT_EQ(g.min(), 3u);
  EXPECT_EQ(g.max(), 1000001u);
  EXPECT_DOUBLE_EQ(g.mean(), 1000016.0 / 4.0);
}

TEST(Histogram, MergeEqualsRecordingBoth) {
  std::mt19937_64 rng(11);
  Histogram a, b, both;
  for (int i = 0; i < 20000; i++) {
    uint64_t v = rng() % 50000;
    a.record(v);
    both.record(v);
  }
  for (int i = 0; i < 30000; i++) {
    uint64_t v = 40000 + rng() % 10000000;
    b.record(v);
    both.record(v);
  }
  Histogram m = a;
  m.merge(b);
  EXPECT_EQ(m.count(), both.count());
  EXPECT_EQ(m.min(), both.min());
  EXPECT_EQ(m.max(), both.max());
  EXPECT_EQ(m.mean(), both.mean());
  for (int i = 0; i <= 2000; i++) {
    double q = i / 2000.0;
    ASSERT_EQ(m.quantile(q), both.quantile(q)) << "q=" << q;
  }
  // Merging with an empty histogram changes nothing, in either direction.
  Histogram empty;
  Histogram m2 = m;
  m2.merge(empty);
  EXPECT_EQ(m2.count(), m.count());
  EXPECT_EQ(m2.min(), m.min());
  EXPECT_EQ(m2.max(), m.max());
  EXPECT_EQ(m2.quantile(0.5), m.quantile(0.5));
  Histogram e2;
  e2.merge(m);
  EXPECT_EQ(e2.count(), m.count());
  EXPECT_EQ(e2.min(), m.min());
  EXPECT_EQ(e2.max(), m.max());
  EXPECT_EQ(e2.mean(), m.mean());
  EXPECT_EQ(e2.quantile(0.99), m.quantile(0.99));
  Histogram e3;
  e3.merge(empty);
  EXPECT_EQ(e3.count(), 0u);
  EXPECT_EQ(e3.min(), 0u);
  EXPECT_EQ(e3.quantile(0.5), 0u);
}

TEST(Histogram, LognormalRelativeErrorBelowOnePercent) {
  std::mt19937_64 rng(2024);
  std::lognormal_distribution<double> dist(std::log(20000.0), 1.5);  // ~20 us median, heavy tail
  Histogram h;
  std::vector<uint64_t> vals;
  const int n = 200000;
  vals.reserve(n);
  for (int i = 0; i < n; i++) {
    double x = dist(rng);
    uint64_t v = x > 1e15 ? uint64_t{1000000000000000} : static_cast<uint64_t>(x);
    vals.push_back(v);
    h.record(v);
  }
  std::sort(vals.begin(), vals.end());
  double worst = 0;
  for (int i = 0; i <= 1000; i++) {
    double q = i / 1000.0;
    double want = static_cast<double>(true_quantile(vals, q));
    double got = static_cast<double>(h.quantile(q));
    double rel = want > 0 ? std::fabs(got - want) / want : std::fabs(got - want);
    worst = std::max(worst, rel);
    ASSERT_LT(rel, 0.01) << "q=" << q << " want " << want << " got " << got;
  }
  for (double q : {0.99999, 0.999999}) {
    double want = static_cast<double>(true_quantile(vals, q));
    EXPECT_LT(std::fabs(static_cast<double>(h.quantile(q)) - want) / want, 0.01) << q;
  }
  // Midpoint representative: error is at most half a bucket (1/256).
  EXPECT_LT(worst, 0.5 / Histogram::kSub + 1e-12);
}

// bins(): exact counts, contiguous non-overlapping [low, high) ranges that
// hold every recorded value, and about per_octave bins per power of two.
TEST(HistogramBins, CoarseBinsKeepCountsAndCoverValues) {
  Histogram h;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(20000.0), 0.8);
  std::vector<uint64_t> values;
  for (int i = 0; i < 200000; i++) values.push_back(static_cast<uint64_t>(dist(rng)));
  values.push_back(0);
  values.push_back(3);
  for (auto v : values) h.record(v);
  auto bins = h.bins(16);
  uint64_t total = 0;
  for (size_t i = 0; i < bins.size(); i++) {
    EXPECT_LT(bins[i].low, bins[i].high);
    EXPECT_GT(bins[i].count, 0u);
    if (i) {
      EXPECT_LE(bins[i - 1].high, bins[i].low);
    }
    total += bins[i].count;
  }
  EXPECT_EQ(total, h.count());
  for (auto v : values) {
    uint64_t in = 0;
    for (auto& b : bins) in += (v >= b.low && v < b.high);
    EXPECT_EQ(in, 1u) << v;
  }
  // The values span ~2^13 (factor 8000): at most 16 bins per octave plus the
  // exact small ones.
  double octaves = std::log2(static_cast<double>(h.max()) / 1000.0) + 1;
  EXPECT_LE(bins.size(), static_cast<size_t>(16 * octaves + 16));
  // Each bin of large values is at most ~1/16 octave wide (plus one fine bucket).
  for (auto& b : bins) {
    if (b.low >= 1024) {
      EXPECT_LE(static_cast<double>(b.high) / b.low, std::pow(2.0, 1.0 / 16) * 1.01);
    }
  }
  EXPECT_TRUE(Histogram().bins().empty());
}
