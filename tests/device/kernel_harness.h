// Test harness for running corpus kernels on a Device: load PTX by name, move data, pack
// parameters checked against the kernel's signature, launch and wait.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "device/cpu/cpu_device.h"
#include "device/device.h"
#include "device/select.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace gpuwasm::testing {

inline std::string KernelPtxPath(const std::string& name, const std::string& arch) {
  // $GPUWASM_KERNEL_PTX_DIR: the corpus carried elsewhere (the GPU check's bundle).
  const char* dir = std::getenv("GPUWASM_KERNEL_PTX_DIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : GPUWASM_KERNEL_PTX_DIR) + "/" + name + "." + arch + ".ptx";
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The host's instrumentation adds hidden parameters after a kernel's own (ptx/instrument.h).
inline bool IsHiddenParam(const device::KernelParam& p) { return p.name.rfind("__gw_", 0) == 0; }
inline size_t VisibleParams(const device::KernelSignature& sig) {
  size_t n = sig.params.size();
  while (n > 0 && IsHiddenParam(sig.params[n - 1])) --n;
  return n;
}

// Packs kernel arguments at the offsets of the kernel's .param list, checking each size. Hidden
// parameters are left for KernelHarness::Run to fill.
class Params {
 public:
  explicit Params(const device::KernelSignature& sig)
      : sig_(sig), bytes_(sig.param_bytes, 0), visible_(VisibleParams(sig)) {}
  template <class T>
  Params& Add(T v) {
    EXPECT_LT(next_, visible_) << "too many arguments for " << sig_.name;
    if (next_ >= visible_) return *this;
    const auto& p = sig_.params[next_++];
    EXPECT_EQ(p.size, sizeof(T)) << sig_.name << " parameter " << p.name;
    std::memcpy(bytes_.data() + p.offset, &v, std::min<size_t>(sizeof(T), p.size));
    return *this;
  }
  std::vector<uint8_t> Build() {
    EXPECT_EQ(next_, visible_) << "too few arguments for " << sig_.name;
    return bytes_;
  }

 private:
  const device::KernelSignature& sig_;
  std::vector<uint8_t> bytes_;
  size_t visible_;
  size_t next_ = 0;
};

// What the harness loads: the PTX as given, printed again from its syntax tree, or instrumented
// the way the host instruments every module a guest loads.
enum class PtxForm { kAsGiven, kPrinted, kInstrumented };

class KernelHarness {
 public:
  explicit KernelHarness(std::shared_ptr<device::Device> dev = nullptr, PtxForm form = PtxForm::kAsGiven)
      : dev_(dev ? dev : SharedTestDevice()), form_(form) {
    ctx_ = *dev_->CreateContext();
    stream_ = *ctx_->CreateStream();
  }

  static std::shared_ptr<device::Device> SharedCpuDevice() {
    static std::shared_ptr<device::Device> d = device::cpu::CreateCpuDevice();
    return d;
  }

  // The CPU device compiling every kernel it can translate before its first launch.
  static std::shared_ptr<device::Device> SharedNativeCpuDevice() {
    static std::shared_ptr<device::Device> d =
        device::cpu::CreateCpuDevice({.native = device::cpu::NativeMode::kAlways});
    return d;
  }

  // The CPU device, or the one $GPUWASM_TEST_DEVICE names ("cuda:0": the corpus on a GPU, or on
  // the fake driver in CI); a device that cannot be opened aborts the run.
  static std::shared_ptr<device::Device> SharedTestDevice() {
    static std::shared_ptr<device::Device> d = [] {
      const char* spec = std::getenv("GPUWASM_TEST_DEVICE");
      if (spec == nullptr || *spec == '\0') return SharedCpuDevice();
      auto r = device::OpenDevice(spec);
      if (!r.ok()) {
        std::fprintf(stderr, "GPUWASM_TEST_DEVICE=%s: %s\n", spec, r.status().message().c_str());
        std::abort();
      }
      return *r;
    }();
    return d;
  }

  // Whether the test device is the CPU device (no $GPUWASM_TEST_DEVICE, or one naming it).
  static bool TestDeviceIsCpu() { return SharedTestDevice()->info().kind == device::DeviceKind::kCpu; }

  std::shared_ptr<const device::Kernel> Load(const std::string& file, const std::string& arch,
                                             const std::string& kernel) {
    return LoadFrom(KernelPtxPath(file, arch), kernel);
  }

  // `text` in the harness's form (PtxForm); errors of parsing or instrumenting as the status.
  Result<std::string> Form(const std::string& text) const {
    if (form_ == PtxForm::kAsGiven) return text;
    GPUWASM_ASSIGN_OR_RETURN(ptx::Module m, ptx::Parse(text));
    if (form_ == PtxForm::kPrinted) return ptx::Print(m);
    GPUWASM_ASSIGN_OR_RETURN(ptx::Module inst, ptx::Instrument(m));
    return ptx::Print(inst, {.keep_lines = true});
  }

  Result<std::shared_ptr<const device::Module>> LoadText(const std::string& text) {
    GPUWASM_ASSIGN_OR_RETURN(std::string formed, Form(text));
    GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const device::Module> m, ctx_->LoadModule(formed));
    modules_.push_back(m);
    return m;
  }

  std::shared_ptr<const device::Kernel> LoadFrom(const std::string& path, const std::string& kernel) {
    return LoadKernel(ReadText(path), kernel, path);
  }

  // `kernel` of the module `text` (null, failing the test, when either is refused; `what` names
  // the text in the message).
  std::shared_ptr<const device::Kernel> LoadKernel(const std::string& text, const std::string& kernel,
                                                   const std::string& what = "PTX") {
    auto m = LoadText(text);
    EXPECT_TRUE(m.ok()) << what << ": " << m.status();
    if (!m.ok()) return nullptr;
    auto k = (*m)->GetKernel(kernel);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? *k : nullptr;
  }

  template <class T>
  device::DevicePtr Upload(const std::vector<T>& v) {
    auto p = ctx_->Allocate(std::max<size_t>(1, v.size() * sizeof(T)));
    EXPECT_TRUE(p.ok()) << p.status();
    if (!v.empty()) {
      EXPECT_TRUE(stream_->MemcpyHtoD(*p, v.data(), v.size() * sizeof(T)).ok());
    }
    return *p;
  }

  template <class T>
  device::DevicePtr Zeros(size_t n) {
    return Upload(std::vector<T>(n, T{}));
  }

  template <class T>
  std::vector<T> Download(device::DevicePtr p, size_t n) {
    std::vector<T> v(n);
    Status s = stream_->MemcpyDtoH(v.data(), p, n * sizeof(T));
    EXPECT_TRUE(s.ok()) << s;
    return v;
  }

  Status Run(const device::Kernel& k, device::Dim3 grid, device::Dim3 block, std::vector<uint8_t> params,
             uint32_t shared = 0, device::LaunchOptions options = {}) {
    device::LaunchConfig c;
    c.grid = grid;
    c.block = block;
    c.shared_bytes = shared;
    const device::KernelSignature& sig = k.signature();
    const bool hidden = VisibleParams(sig) != sig.params.size();
    if (hidden) {  // an instrumented kernel: the window and the control block, as the host passes them
      if (control_ == 0) control_ = Zeros<uint8_t>(sizeof(ptx::ControlBlock));
      const uint64_t values[3] = {window_base_, window_size_, control_};
      for (size_t i = 0; i < 3; ++i) {
        std::memcpy(params.data() + sig.params[VisibleParams(sig) + i].offset, &values[i], 8);
      }
    }
    GPUWASM_RETURN_IF_ERROR(stream_->Launch(k, c, std::move(params), std::move(options)));
    Status s = stream_->Synchronize();
    if (s.ok() && hidden) {
      ptx::ControlBlock b;
      GPUWASM_RETURN_IF_ERROR(stream_->MemcpyDtoH(&b, control_, sizeof b));
      if (b.fault != ptx::kNoFault || b.abort != 0) {
        const ptx::ControlBlock clear;
        GPUWASM_RETURN_IF_ERROR(stream_->MemcpyHtoD(control_, &clear, sizeof clear));
        return ptx::ControlBlockStatus(&b, sig.name);
      }
    }
    return s;
  }

  // The window instrumented kernels may reach (by default all of the context's address space).
  void SetWindow(uint64_t base, uint64_t size) {
    window_base_ = base;
    window_size_ = size;
  }
  // The control block instrumented kernels read and write (allocated at their first launch).
  device::DevicePtr control() {
    if (control_ == 0) control_ = Zeros<uint8_t>(sizeof(ptx::ControlBlock));
    return control_;
  }

  device::Context& context() { return *ctx_; }
  device::Stream& stream() { return *stream_; }

 private:
  std::shared_ptr<device::Device> dev_;
  PtxForm form_;
  std::shared_ptr<device::Context> ctx_;
  std::unique_ptr<device::Stream> stream_;
  std::vector<std::shared_ptr<const device::Module>> modules_;
  uint64_t window_base_ = 0, window_size_ = uint64_t{1} << 62;
  device::DevicePtr control_ = 0;
};

// Distance in units in the last place between two floats (0 when bit-identical).
inline uint32_t UlpDiff(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  int64_t d = static_cast<int64_t>(ia) - ib;
  return static_cast<uint32_t>(std::min<int64_t>(d < 0 ? -d : d, UINT32_MAX));
}

inline uint64_t UlpDiff(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  if (ia < 0) ia = INT64_MIN - ia;
  if (ib < 0) ib = INT64_MIN - ib;
  __int128 d = static_cast<__int128>(ia) - ib;
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

}  // namespace gpuwasm::testing
