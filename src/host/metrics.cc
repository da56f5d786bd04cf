#include "host/metrics.h"

#include <sstream>

namespace gpuwasm::host {

std::ostream& operator<<(std::ostream& os, const InstanceMetricsSnapshot& s) {
  return os << "{kernels_launched=" << s.kernels_launched << ", bytes_pinned=" << s.bytes_pinned
            << ", back_pressure_rejections=" << s.back_pressure_rejections << ", yield_count=" << s.yield_count
            << ", device_bytes_allocated=" << s.device_bytes_allocated << ", kernel_faults=" << s.kernel_faults
            << ", quota_refusals=" << s.quota_refusals << "}";
}

std::string ToString(const InstanceMetricsSnapshot& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

void to_json(nlohmann::json& j, const InstanceMetricsSnapshot& s) {
  j = nlohmann::json{{"kernels_launched", s.kernels_launched},
                     {"bytes_pinned", s.bytes_pinned},
                     {"back_pressure_rejections", s.back_pressure_rejections},
                     {"yield_count", s.yield_count},
                     {"device_bytes_allocated", s.device_bytes_allocated},
                     {"kernel_faults", s.kernel_faults},
                     {"quota_refusals", s.quota_refusals}};
}

std::string ToJson(const InstanceMetricsSnapshot& s) {
  std::string out;
  out.reserve(192);
  auto field = [&](const char* key, uint64_t v) {
    out += out.empty() ? "{\"" : ",\"";
    out += key;
    out += "\":";
    out += std::to_string(v);
  };
  field("back_pressure_rejections", s.back_pressure_rejections);
  field("bytes_pinned", s.bytes_pinned);
  field("device_bytes_allocated", s.device_bytes_allocated);
  field("kernel_faults", s.kernel_faults);
  field("kernels_launched", s.kernels_launched);
  field("quota_refusals", s.quota_refusals);
  field("yield_count", s.yield_count);
  out += '}';
  return out;
}

void from_json(const nlohmann::json& j, InstanceMetricsSnapshot& s) {
  s.kernels_launched = j.at("kernels_launched").get<uint64_t>();
  s.bytes_pinned = j.at("bytes_pinned").get<uint64_t>();
  s.back_pressure_rejections = j.at("back_pressure_rejections").get<uint64_t>();
  s.yield_count = j.at("yield_count").get<uint32_t>();
  s.device_bytes_allocated = j.at("device_bytes_allocated").get<uint64_t>();
  s.kernel_faults = j.value("kernel_faults", uint64_t{0});    // absent before instrumented PTX
  s.quota_refusals = j.value("quota_refusals", uint64_t{0});  // absent before issue #23
}

}  // namespace gpuwasm::host
