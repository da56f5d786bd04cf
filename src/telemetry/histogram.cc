#include "telemetry/histogram.h"

namespace gpuwasm::telemetry {

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<double> bounds)
    : name_(std::move(name)), help_(std::move(help)), bounds_(std::move(bounds)) {}

std::vector<double> HistogramFamily::LatencyBounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

void HistogramFamily::Observe(const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  Series& s = series_[labels];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++s.buckets[i];
      break;
    }
  }
  ++s.count;
  s.sum += value;
}

uint64_t HistogramFamily::Count(const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.count;
}

std::string HistogramFamily::RenderPrometheus() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (series_.empty()) return "";
  std::string out = "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " histogram\n";
  for (const auto& [labels, s] : series_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      Labels with = labels;
      if (i < bounds_.size()) {
        cumulative += s.buckets[i];
        with.emplace_back("le", MetricRegistry::FormatSample(bounds_[i]));
      } else {
        cumulative = s.count;
        with.emplace_back("le", "+Inf");
      }
      out += name_ + "_bucket" + MetricRegistry::RenderLabels(with) + " " + std::to_string(cumulative) + "\n";
    }
    std::string l = MetricRegistry::RenderLabels(labels);
    out += name_ + "_sum" + l + " " + MetricRegistry::FormatSample(s.sum) + "\n";
    out += name_ + "_count" + l + " " + std::to_string(s.count) + "\n";
  }
  return out;
}

}  // namespace gpuwasm::telemetry
