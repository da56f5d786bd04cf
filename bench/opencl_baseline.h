// OpenClBaseline: the kernels of bench/opencl/kernels.cl on an OpenCL CPU device (PoCL, Debian's
// pocl-opencl-icd): the peer bench_cpu_device measures the CPU device against. PoCL turns a
// work-group into loops over its work-items between barriers and lets LLVM vectorise them.
//
// A baseline limited to fewer compute units than the device has runs on a sub-device of that many
// (PoCL runs one thread per compute unit). Errors after Open() end the benchmark with a message.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace gpuwasm::bench {

class OpenClBaseline {
 public:
  // A device buffer of `bytes`.
  struct Buffer {
    void* mem = nullptr;  // cl_mem
    size_t bytes = 0;
  };
  // Dynamic local memory of `bytes` (a __local pointer parameter).
  struct Local {
    size_t bytes = 0;
  };

  // The first OpenCL CPU device with `compute_units` of its compute units, the kernels of `source`
  // built for it; null, and `why`, when there is none (PoCL not installed, or this benchmark built
  // without OpenCL).
  static std::unique_ptr<OpenClBaseline> Open(unsigned compute_units, const std::string& source, std::string* why);
  ~OpenClBaseline();
  OpenClBaseline(const OpenClBaseline&) = delete;
  OpenClBaseline& operator=(const OpenClBaseline&) = delete;

  std::string device_name() const { return name_; }

  // A buffer holding a copy of `bytes` of `data`.
  Buffer Upload(const void* data, size_t bytes);
  // Reads the whole buffer into `data`.
  void Download(const Buffer& b, void* data);
  // Overwrites the whole buffer with `data` (b.bytes of it).
  void Write(const Buffer& b, const void* data);
  void Free(const Buffer& b);

  // A kernel argument: a buffer, dynamic local memory, or a scalar's bytes.
  struct Arg {
    void* handle = nullptr;        // a Buffer's cl_mem (passed by address)
    size_t local_bytes = 0;        // a Local
    std::vector<uint8_t> value{};  // a scalar
  };
  static Arg ArgOf(const Buffer& b) { return {.handle = b.mem}; }
  static Arg ArgOf(const Local& l) { return {.local_bytes = l.bytes}; }
  template <class T>
  static Arg ArgOf(const T& v) {
    Arg a;
    a.value.resize(sizeof v);
    std::memcpy(a.value.data(), &v, sizeof v);
    return a;
  }

  // Runs `kernel` over `global` work-items (per dimension, 1 to 3) in groups of `local`, and waits
  // for it.
  void Run(const char* kernel, const std::vector<size_t>& global, const std::vector<size_t>& local,
           const std::vector<Arg>& args);

 private:
  struct Handles;
  OpenClBaseline();
  std::unique_ptr<Handles> h_;
  std::string name_;
};

}  // namespace gpuwasm::bench
