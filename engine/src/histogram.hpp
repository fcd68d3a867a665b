// Bounded-memory latency histogram (log-linear buckets, HDR style):
// relative error below 1/kSub for any value, fixed memory whatever the
// number of samples.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace rooftop {

class Histogram {
 public:
  static constexpr int kSubBits = 7;  // 128 sub-buckets: < 0.8 % error
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxExp = 48;  // values up to 2^48 ns (~3 days)
  static constexpr int kBuckets = (kMaxExp - kSubBits + 2) * kSub;

  void record(uint64_t v);
  void merge(const Histogram& o);
  void reset();
  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  // Value at quantile q in [0,1]: the representative value (midpoint) of
  // the bucket holding the q-th sample, clamped to [min, max].
  uint64_t quantile(double q) const;

  // The distribution at a coarser resolution, for plotting: non-empty bins
  // [low, high) in recorded units, about per_octave bins per power of two
  // (bins are unions of whole buckets, so counts are exact).
  struct Bin {
    uint64_t low, high, count;
  };
  std::vector<Bin> bins(int per_octave = 16) const;

  static int bucket_of(uint64_t v);
  static uint64_t bucket_low(int b);
  static uint64_t bucket_high(int b);  // exclusive

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  unsigned __int128 sum_ = 0;
};

}  // namespace rooftop
