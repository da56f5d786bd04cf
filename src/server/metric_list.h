// The one list of what `/metrics` exports (but the GPM gauges, named from NVML's own list in
// nvml.h, AllGpmMetrics()): each metric's name, type, labels and help text. Api::RenderMetrics exports
// only metrics of this list (by its id), and `metric_list_test` checks docs/metrics.md against it,
// printing the table rows generated from it when they differ. A new limit or refusal gets its
// counter here first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpuwasm::server {

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };

struct MetricDef {
  std::string_view name;
  MetricType type;
  std::string_view labels;  // comma-separated, in the order exported; empty: none
  std::string_view help;    // the # HELP line
};

// X(id, name, type, labels, help)
#define GPUWASM_METRICS(X)                                                                                          \
  X(kInvocations, "gpuwasm_invocations_total", kCounter, "tenant, function, function_id, status",                   \
    "Finished invocations by tenant, function and outcome.")                                                        \
  X(kDeploysRefused, "gpuwasm_deploys_refused_total", kCounter, "tenant",                                           \
    "Deploys refused by the tenant's max_versions or max_stored_bytes.")                                            \
  X(kInvocationsRejected, "gpuwasm_invocations_rejected_total", kCounter, "tenant",                                 \
    "Invocations refused by admission (tenant overloaded).")                                                        \
  X(kLimitRefusals, "gpuwasm_limit_refusals_total", kCounter, "tenant, limit",                                      \
    "Deploys and invocations refused by a tenant limit: max_module_size, max_input_size, args_and_env.")            \
  X(kInvocationDuration, "gpuwasm_invocation_duration_seconds", kHistogram, "tenant",                               \
    "Invocation wall time, admission to end (queueing included), by tenant.")                                       \
  X(kKernelsLaunched, "gpuwasm_kernels_launched_total", kCounter, "tenant",                                         \
    "Kernel launches that reached the dispatch path.")                                                              \
  X(kFunctionKernelsLaunched, "gpuwasm_function_kernels_launched_total", kCounter, "tenant, function, function_id", \
    "Kernel launches, by function.")                                                                                \
  X(kBackPressureRejections, "gpuwasm_back_pressure_rejections_total", kCounter, "tenant",                          \
    "Launches refused by back-pressure (slot or deadline).")                                                        \
  X(kYields, "gpuwasm_yields_total", kCounter, "tenant", "wasi_scheduler.yield calls.")                             \
  X(kKernelFaults, "gpuwasm_kernel_faults_total", kCounter, "tenant",                                               \
    "Launches an instrumented kernel ended itself: an access outside the instance's buffers, or a trap.")           \
  X(kQuotaRefusals, "gpuwasm_quota_refusals_total", kCounter, "tenant",                                             \
    "Guest calls refused with WCU_ERR_QUOTA: a module, buffer or byte quota of the instance or its tenant.")        \
  X(kGpuTime, "gpuwasm_gpu_time_seconds_total", kCounter, "tenant", "Time the tenant's kernels ran on the device.") \
  X(kFunctionGpuTime, "gpuwasm_function_gpu_time_seconds_total", kCounter, "tenant, function, function_id",         \
    "Time the function's kernels ran on the device.")                                                               \
  X(kRunningInstances, "gpuwasm_running_instances", kGauge, "tenant",                                               \
    "Invocations admitted and not finished (queued included).")                                                     \
  X(kDeviceBytesAllocated, "gpuwasm_device_bytes_allocated", kGauge, "tenant",                                      \
    "Live device-buffer bytes of running instances.")                                                               \
  X(kPtxBytesRetained, "gpuwasm_ptx_bytes_retained", kGauge, "tenant",                                              \
    "PTX bytes retained by live modules of running instances.")                                                     \
  X(kDeviceContextBytes, "gpuwasm_device_context_bytes", kGauge, "tenant",                                          \
    "Device bytes held in the tenant's device context.")                                                            \
  X(kDeviceContextReservedBytes, "gpuwasm_device_context_reserved_bytes", kGauge, "tenant",                         \
    "Device bytes the tenant's device context holds from the GPU: its buffers plus what its memory pool keeps for " \
    "reuse (given back when idle).")                                                                                \
  X(kDeviceContextResets, "gpuwasm_device_context_resets_total", kCounter, "tenant",                                \
    "Times the tenant's GPU context was rebuilt after a device fault or a kernel past its deadline.")               \
  X(kWorkers, "gpuwasm_workers", kGauge, "", "Tenant worker processes alive.")                                      \
  X(kWorkersStarted, "gpuwasm_workers_started_total", kCounter, "", "Tenant worker processes started.")             \
  X(kWorkersLost, "gpuwasm_workers_lost_total", kCounter, "",                                                       \
    "Tenant workers ended while they ran invocations: a process-fatal device error, a kernel past its deadline, "   \
    "the memory limit, no heartbeat, a crash or a kill.")                                                           \
  X(kWorkersIdleStopped, "gpuwasm_workers_idle_stopped_total", kCounter, "",                                        \
    "Tenant workers stopped for being idle, or to make room.")                                                      \
  X(kWorkerResidentBytes, "gpuwasm_worker_resident_bytes", kGauge, "tenant",                                        \
    "Resident memory of the tenant's worker process.")                                                              \
  X(kHttpRequests, "gpuwasm_http_requests_total", kCounter, "route, method, code",                                  \
    "HTTP requests answered, by route, method and status code.")                                                    \
  X(kHttpRequestDuration, "gpuwasm_http_request_duration_seconds", kHistogram, "route",                             \
    "HTTP request handling time, whole body received to response ready, by route.")                                 \
  X(kHttpConnectionsRefused, "gpuwasm_http_connections_refused_total", kCounter, "reason",                          \
    "Connections answered 503 and closed at once: over max_connections (total), over max_connections_per_client "   \
    "(per_client), or accept failing for lack of descriptors.")                                                     \
  X(kIoHandoffs, "gpuwasm_io_thread_handoffs_total", kCounter, "",                                                  \
    "I/O threads whose place went to a spare thread while an invocation held them for over a millisecond.")         \
  X(kBuildInfo, "gpuwasm_build_info", kGauge, "version, device", "Build of this gpuwasm node (always 1).")          \
  X(kModuleCompiles, "gpuwasm_module_compiles_total", kCounter, "",                                                 \
    "Wasm modules this node translated and compiled to native code (deploys, and first use elsewhere).")            \
  X(kCompilesCrashed, "gpuwasm_compiles_crashed_total", kCounter, "",                                               \
    "Deploys whose compile was running when gpuwasm on this node died, failed at the next start.")                  \
  X(kModuleCacheLoads, "gpuwasm_module_cache_loads_total", kCounter, "",                                            \
    "Wasm modules this node loaded from the compiled-module cache instead of compiling them.")                      \
  X(kModuleQuickCompiles, "gpuwasm_module_quick_compiles_total", kCounter, "",                                      \
    "Of the module compiles, large modules compiled first by the quick tier (optimised in the background).")        \
  X(kModuleTierUpgrades, "gpuwasm_module_tier_upgrades_total", kCounter, "",                                        \
    "Functions whose quick-tier code was replaced by the optimised compile of their module.")

enum class Metric : uint8_t {
#define GPUWASM_METRIC_ID(id, name, type, labels, help) id,
  GPUWASM_METRICS(GPUWASM_METRIC_ID)
#undef GPUWASM_METRIC_ID
};

inline constexpr MetricDef kMetricList[] = {
#define GPUWASM_METRIC_DEF(id, name, type, labels, help) {name, MetricType::type, labels, help},
    GPUWASM_METRICS(GPUWASM_METRIC_DEF)
#undef GPUWASM_METRIC_DEF
};

constexpr const MetricDef& Def(Metric m) { return kMetricList[static_cast<size_t>(m)]; }

constexpr std::string_view MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace gpuwasm::server
