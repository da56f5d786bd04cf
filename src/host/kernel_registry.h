// KernelRegistry: one per instance. Maps the instance's module and kernel handles to device
// objects and retains each module's PTX text (exactly the bytes given) while the module lives.
// Single-threaded: owned by the instance's thread; retained_bytes() may be read from any thread.
#pragma once

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"
#include "device/device.h"
#include "host/handles.h"
#include "host/tenant_context.h"

namespace gpuwasm::host {

class KernelRegistry {
 public:
  KernelRegistry(std::shared_ptr<TenantContext> cache, uint32_t seed)
      : cache_(std::move(cache)), modules_(1, seed), kernels_(2, seed * 7 + 1) {}

  // The module's handle; errors from the device (bad PTX, unsupported instruction).
  Result<int32_t> LoadModule(std::string ptx);
  // False for an unknown handle. Kernel handles of the module become invalid too; launches
  // already queued keep the module alive until they ran.
  bool UnloadModule(int32_t module);
  // NotFound for an unknown kernel name; InvalidArgument for a bad module handle.
  Result<int32_t> GetKernel(int32_t module, std::string_view name);
  // What a launch needs of a kernel, worked out once when its handle is made: the signature and,
  // per parameter, where its bytes go and which scalar record kind fills it.
  struct ArgSlot {
    uint32_t offset = 0;
    uint32_t size = 0;
    // The one scalar record kind (WCU_ARG_B8..B64) of exactly `size` bytes. A parameter no scalar
    // fits holds WCU_ARG_BUFFER, which the launch loop never compares against a scalar record.
    uint32_t scalar_kind = 0;
  };
  // A kernel handle a guest holds (the CPU device's decoded kernel is device::cpu::KernelEntry).
  struct GuestKernel {
    std::shared_ptr<const device::Kernel> kernel;
    int32_t module = 0;
    const device::KernelSignature* sig = nullptr;  // the kernel's own
    std::vector<ArgSlot> args;                     // one per parameter the guest passes
    // An instrumented kernel: where its hidden parameters (window base and size, control block)
    // go in the parameter buffer; kNoHidden otherwise.
    uint32_t hidden_offset = kNoHidden;
  };
  static constexpr uint32_t kNoHidden = UINT32_MAX;
  // Borrowed: valid until the kernel's module is unloaded (a launch holds its own reference).
  const GuestKernel* FindKernel(int32_t kernel) { return kernels_.Get(kernel); }
  bool HasModule(int32_t module) { return modules_.Get(module) != nullptr; }

  // "vector_add.cu:12": where PTX line `ptx_line` of kernel `kernel` came from, by the last `.loc`
  // before it in the kernel's body (nvcc -lineinfo writes them); "" when its PTX has none.
  std::string SourceLine(std::string_view kernel, uint32_t ptx_line);

  uint64_t retained_bytes() const { return retained_.load(std::memory_order_relaxed); }
  size_t module_count() const { return modules_.size(); }
  void Clear();

 private:
  struct ModuleEntry {
    std::shared_ptr<const device::Module> module;
    std::string ptx;  // retained while the module lives
  };
  std::shared_ptr<TenantContext> cache_;
  HandleTable<ModuleEntry> modules_;
  HandleTable<GuestKernel> kernels_;
  std::atomic<uint64_t> retained_{0};
};

}  // namespace gpuwasm::host
