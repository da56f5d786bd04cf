// MetricRegistry: gauges (and counters) with labels, rendered in the Prometheus text exposition
// format (version 0.0.4). Thread-safe: set/add/remove/render from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuwasm::telemetry {

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricRegistry {
 public:
  // `help` and the type are taken when the family is first seen.
  void SetGauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  void AddCounter(std::string_view name, std::string_view help, const Labels& labels, double delta);
  void Remove(const std::string& name, const Labels& labels);
  // Value of a series, for tests; NaN when absent.
  double Get(const std::string& name, const Labels& labels) const;
  std::string RenderPrometheus() const;

  // {a="x",b="y"} with values escaped ("" for no labels), and a sample value as Prometheus
  // writes it (+Inf, NaN, shortest round-trip decimal).
  static std::string RenderLabels(const Labels& labels);
  static std::string FormatSample(double v);

 private:
  struct Family {
    std::string help, type;
    std::map<std::string, double> series;  // rendered label set -> value
  };
  Family& FamilyOf(std::string_view name, std::string_view help, const char* type);  // mu_ held

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;
};

}  // namespace gpuwasm::telemetry
