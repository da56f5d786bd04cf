#include "telemetry/registry.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace gpuwasm::telemetry {
namespace {

std::string Escape(const std::string& s, bool quotes) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quotes)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest decimal that reads back as the same double (0.42, not 0.41999999999999998).
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

}  // namespace

std::string MetricRegistry::FormatSample(double v) { return FormatValue(v); }

std::string MetricRegistry::RenderLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ",";
    s += labels[i].first + "=\"" + Escape(labels[i].second, true) + "\"";
  }
  return s + "}";
}

MetricRegistry::Family& MetricRegistry::FamilyOf(std::string_view name, std::string_view help, const char* type) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{}).first;
    it->second.help = help;
    it->second.type = type;
  }
  return it->second;
}

void MetricRegistry::SetGauge(std::string_view name, std::string_view help, const Labels& labels, double value) {
  std::string key = RenderLabels(labels);
  std::lock_guard<std::mutex> lock(mu_);
  FamilyOf(name, help, "gauge").series[std::move(key)] = value;
}

void MetricRegistry::AddCounter(std::string_view name, std::string_view help, const Labels& labels, double delta) {
  std::string key = RenderLabels(labels);
  std::lock_guard<std::mutex> lock(mu_);
  FamilyOf(name, help, "counter").series[std::move(key)] += delta;
}

void MetricRegistry::Remove(const std::string& name, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  it->second.series.erase(RenderLabels(labels));
  if (it->second.series.empty()) families_.erase(it);
}

double MetricRegistry::Get(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return std::numeric_limits<double>::quiet_NaN();
  auto s = it->second.series.find(RenderLabels(labels));
  return s == it->second.series.end() ? std::numeric_limits<double>::quiet_NaN() : s->second;
}

std::string MetricRegistry::RenderPrometheus() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + Escape(f.help, false) + "\n";
    out += "# TYPE " + name + " " + f.type + "\n";
    for (const auto& [labels, v] : f.series) out += name + labels + " " + FormatValue(v) + "\n";
  }
  return out;
}

}  // namespace gpuwasm::telemetry
