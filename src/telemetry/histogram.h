// HistogramFamily: Prometheus histograms (cumulative buckets, _sum, _count) keyed by label set.
// Thread-safe: Observe() and Render() from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "telemetry/registry.h"

namespace gpuwasm::telemetry {

class HistogramFamily {
 public:
  // `bounds`: the upper bounds of the buckets, increasing (+Inf is added).
  HistogramFamily(std::string name, std::string help, std::vector<double> bounds);

  void Observe(const Labels& labels, double value);
  // The family in the text exposition format (nothing when no series was observed).
  std::string RenderPrometheus() const;
  // Count of a series, for tests (0 when absent).
  uint64_t Count(const Labels& labels) const;

  // 1 ms .. 60 s, for request and invocation durations in seconds.
  static std::vector<double> LatencyBounds();

 private:
  struct Series {
    std::vector<uint64_t> buckets;  // per bound, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  std::string name_, help_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<Labels, Series> series_;
};

}  // namespace gpuwasm::telemetry
