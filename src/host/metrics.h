// InstanceMetricsSnapshot: what one guest instance has done, as seen by operators.
//
//   kernels_launched          lifetime launches that reached the dispatch path
//   bytes_pinned              current PTX bytes retained by the instance's live modules
//   back_pressure_rejections  lifetime launches refused by admission (slot saturated or deadline)
//   yield_count               cumulative wasi_scheduler.yield calls (0 without a scheduler)
//   device_bytes_allocated    current bytes of the instance's live device buffers
//   kernel_faults             launches an instrumented kernel ended itself: an access outside the
//                             instance's buffers, or a trap (0 or 1: the instance's GPU state is
//                             lost after one)
//   quota_refusals            lifetime calls refused with WCU_ERR_QUOTA: a module, buffer or byte
//                             quota of the instance or its tenant, or gpuwasm.output_write past
//                             the instance's output limit
//
// A plain value: copyable, comparable, default zero, printable, convertible to JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace gpuwasm::host {

struct InstanceMetricsSnapshot {
  uint64_t kernels_launched = 0;
  uint64_t bytes_pinned = 0;
  uint64_t back_pressure_rejections = 0;
  uint32_t yield_count = 0;
  uint64_t device_bytes_allocated = 0;
  uint64_t kernel_faults = 0;
  uint64_t quota_refusals = 0;

  friend bool operator==(const InstanceMetricsSnapshot&, const InstanceMetricsSnapshot&) = default;
};

std::ostream& operator<<(std::ostream& os, const InstanceMetricsSnapshot& s);
std::string ToString(const InstanceMetricsSnapshot& s);
void to_json(nlohmann::json& j, const InstanceMetricsSnapshot& s);
// The same text as nlohmann::json(s).dump() (keys in order), written directly: it goes into every
// invocation's response header, where building the JSON object cost 7 % of a trivial invocation.
std::string ToJson(const InstanceMetricsSnapshot& s);
void from_json(const nlohmann::json& j, InstanceMetricsSnapshot& s);

}  // namespace gpuwasm::host
