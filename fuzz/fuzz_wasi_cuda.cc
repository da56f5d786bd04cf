// Fuzz target: every wasi_cuda call of one instance, in an order, with handles, offsets, sizes,
// launch dimensions and kernel-argument records all taken from the input. Handles are sometimes
// ones the calls returned and sometimes forged. The context's quotas are small and its deadline
// short, so no input can run long or grow large. Whatever happens, the instance's teardown must
// release everything: the device context ends with no bytes allocated.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "host/wasi_cuda.h"

namespace {

using namespace gpuwasm;

class Input {
 public:
  Input(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool empty() const { return p_ >= n_; }
  uint8_t U8() { return p_ < n_ ? d_[p_++] : 0; }
  uint32_t U32() { return U8() | (U8() << 8) | (U8() << 16) | (static_cast<uint32_t>(U8()) << 24); }
  uint64_t U64() { return U32() | (static_cast<uint64_t>(U32()) << 32); }
  std::span<const uint8_t> Bytes(size_t max) {
    size_t len = std::min<size_t>(U8() % (max + 1), n_ - std::min(p_, n_));
    std::span<const uint8_t> s(d_ + p_, len);
    p_ += len;
    return s;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t p_ = 0;
};

std::string ReadPtx(const char* name) {
  std::ifstream in(std::string(GPUWASM_KERNEL_PTX_DIR) + "/" + name + ".sm_80.ptx", std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

int32_t Pick(Input& in, const std::vector<int32_t>& handles) {
  uint8_t how = in.U8();
  if (how < 200 && !handles.empty()) return handles[how % handles.size()];
  return static_cast<int32_t>(in.U32());  // forged
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::shared_ptr<device::Device> cpu = device::cpu::CreateCpuDevice();
  static const std::string kPtx[] = {ReadPtx("vector_add"), ReadPtx("oob_write"), ReadPtx("block_reduce")};
  static const char* kNames[] = {"vector_add", "oob_write", "block_reduce_sum", "missing"};
  device::ContextOptions co;
  co.max_bytes = 1 << 20;
  auto ctx = cpu->CreateContext(co);
  if (!ctx.ok()) std::abort();
  auto modules = std::make_shared<host::TenantContext>(*ctx, /*instrument=*/true);  // as tenants get it
  {
    host::WasiCudaOptions o;
    o.max_buffers = 8;
    o.max_device_bytes = 1 << 20;
    o.max_modules = 3;
    o.max_inflight_launches = 2;
    o.admission_wait = std::chrono::milliseconds(5);
    o.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    host::WasiCudaContext wcu(cpu, modules, o);
    Input in(data, size);
    std::vector<int32_t> buffers, mods, kernels;
    std::vector<uint8_t> scratch(4096);
    for (int step = 0; step < 64 && !in.empty(); ++step) {
      switch (in.U8() % 13) {
        case 0: {
          int32_t h = wcu.MemAlloc(static_cast<int64_t>(in.U32() % (1 << 19)) - 16);
          if (h > 0) buffers.push_back(h);
          break;
        }
        case 1: (void)wcu.MemFree(Pick(in, buffers)); break;
        case 2: {
          int32_t b = Pick(in, buffers);
          int64_t off = static_cast<int64_t>(in.U32() % 70000) - 8;
          (void)wcu.MemcpyHtoD(b, off, in.Bytes(255));
          break;
        }
        case 3: {
          int32_t b = Pick(in, buffers);
          int64_t off = static_cast<int64_t>(in.U32() % 70000) - 8;
          (void)wcu.MemcpyDtoH(std::span(scratch.data(), in.U32() % scratch.size()), b, off);
          break;
        }
        case 4: {
          int32_t d = Pick(in, buffers), s = Pick(in, buffers);
          (void)wcu.MemcpyDtoD(d, in.U32() % 70000, s, in.U32() % 70000, static_cast<int64_t>(in.U32() % 70000) - 4);
          break;
        }
        case 5: (void)wcu.MemsetD8(Pick(in, buffers), in.U32() % 70000, in.U8(), in.U32() % 70000); break;
        case 6: {
          uint8_t which = in.U8();
          int32_t m;
          if (which < 192) {
            const std::string& p = kPtx[which % 3];
            m = wcu.ModuleLoad(std::span(reinterpret_cast<const uint8_t*>(p.data()), p.size()));
          } else {
            m = wcu.ModuleLoad(in.Bytes(255));  // text that is (almost certainly) not PTX
          }
          if (m > 0) mods.push_back(m);
          break;
        }
        case 7: {
          int32_t k = wcu.FunctionGet(Pick(in, mods), kNames[in.U8() % 4]);
          if (k > 0) kernels.push_back(k);
          break;
        }
        case 8: {
          uint32_t grid[3] = {in.U8() % 5u, in.U8() % 3u, 1u + in.U8() % 2u};
          uint32_t block[3] = {in.U8() % 130u, 1u + in.U8() % 2u, 1u};
          uint32_t shared = in.U8() < 250 ? 0 : in.U32();
          uint32_t count = in.U8() % 6;
          std::vector<uint8_t> args(count * host::kWcuArgSize);
          for (uint32_t a = 0; a < count; ++a) {
            uint8_t* r = args.data() + a * host::kWcuArgSize;
            uint32_t kind = in.U8() % 7;  // 0 and 6 are invalid kinds
            int32_t handle = kind == WCU_ARG_BUFFER ? Pick(in, buffers) : 0;
            uint64_t value = in.U8() < 128 ? in.U8() * 64u : in.U64();
            std::memcpy(r, &kind, 4);
            std::memcpy(r + 4, &handle, 4);
            std::memcpy(r + 8, &value, 8);
          }
          // Sometimes fewer bytes than the count claims.
          size_t bytes = in.U8() < 240 ? args.size() : args.size() / 2;
          (void)wcu.Launch(Pick(in, kernels), grid, block, shared, std::span(args.data(), bytes), count);
          break;
        }
        case 9: (void)wcu.Synchronize(); break;
        case 10: (void)wcu.ModuleUnload(Pick(in, mods)); break;
        case 11: {
          uint8_t info[host::kDeviceInfoSize];
          (void)wcu.DeviceInfo(std::span(info, in.U8() % (sizeof info + 1)));
          break;
        }
        default: (void)wcu.LastError(std::span(scratch.data(), in.U8())); break;
      }
      (void)wcu.metrics_snapshot();
    }
  }
  // Teardown released every buffer of the instance.
  if ((*ctx)->allocated_bytes() != 0) std::abort();
  return 0;
}
