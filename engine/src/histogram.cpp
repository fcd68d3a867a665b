#include "histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace rooftop {

int Histogram::bucket_of(uint64_t v) {
  if (v < static_cast<uint64_t>(kSub)) return static_cast<int>(v);
  int msb = 63 - std::countl_zero(v);
  if (msb > kMaxExp) return kBuckets - 1;
  int shift = msb - kSubBits;
  // Sub-bucket index within this power of two, 0..kSub-1 (top bit dropped).
  int sub = static_cast<int>((v >> shift) & (kSub - 1));
  return (shift + 1) * kSub + sub;
}

uint64_t Histogram::bucket_low(int b) {
  if (b < kSub) return static_cast<uint64_t>(b);
  int group = b / kSub;  // >= 1
  int sub = b % kSub;
  int shift = group - 1;
  return (static_cast<uint64_t>(kSub + sub)) << shift;
}

uint64_t Histogram::bucket_high(int b) {
  if (b < kSub) return static_cast<uint64_t>(b) + 1;
  int shift = b / kSub - 1;
  return bucket_low(b) + (uint64_t{1} << shift);
}

void Histogram::record(uint64_t v) {
  counts_[bucket_of(v)]++;
  count_++;
  sum_ += v;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void Histogram::merge(const Histogram& o) {
  for (int i = 0; i < kBuckets; i++) counts_[i] += o.counts_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

std::vector<Histogram::Bin> Histogram::bins(int per_octave) const {
  std::vector<Bin> out;
  long cur = -1;
  for (int b = 0; b < kBuckets; b++) {
    if (!counts_[b]) continue;
    uint64_t lo = bucket_low(b);
    long key = lo == 0 ? -1 : static_cast<long>(std::floor(std::log2(static_cast<double>(lo)) * per_octave));
    if (!out.empty() && key == cur) {
      out.back().high = bucket_high(b);
      out.back().count += counts_[b];
    } else {
      out.push_back({lo, bucket_high(b), counts_[b]});
      cur = key;
    }
  }
  return out;
}

void Histogram::reset() { *this = Histogram(); }

uint64_t Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the sample wanted, 1-based.
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; b++) {
    seen += counts_[b];
    if (seen >= rank) {
      uint64_t lo = bucket_low(b), hi = bucket_high(b);
      uint64_t mid = lo + (hi - lo) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

}  // namespace rooftop
