// wasi_cuda.hpp: the gpuwasm guest interface for C++ guests (C++20, no exceptions), over
// wasi_cuda.h. RAII types that give back what they hold, typed buffers, and kernels whose
// parameter list is part of their type, so a launch with the wrong arguments does not compile:
//
//   wcu::Module module = wcu::Module::Load(vector_add_ptx, vector_add_ptx_len).value();
//   auto add = module.Kernel<const float*, const float*, float*, uint32_t>("vector_add").value();
//   wcu::DeviceBuffer<float> a = wcu::DeviceBuffer<float>::Allocate(n).value(), ...;
//   a.Upload(host_a);
//   add.Launch({n / 256}, {256}, a, b, c, n).value();   // a DeviceBuffer<float> where a float* goes
//   c.Download(host_c).value();                        // waits for the launch
//
// Every call returns wcu::Result<T> (or wcu::Status): ok(), the value, or the error code
// (WCU_ERR_*) with the host's reason (wcu_last_error). value() on an error prints the reason to
// stderr and aborts the guest: for code that checks with `if (!r.ok())`, nothing is hidden.
// The host checks every argument again at launch: the types here catch mistakes early, they do
// not replace the host's checks.
#ifndef GPUWASM_WASI_CUDA_HPP_
#define GPUWASM_WASI_CUDA_HPP_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "wasi_cuda.h"

namespace wcu {

// The error of a call: its WCU_ERR_* code and the host's reason.
struct Error {
  int32_t code = WCU_OK;
  std::string message;
};

// The host's reason for the last failed call.
inline std::string LastError() {
  char buf[512];
  int32_t n = wcu_last_error(buf, sizeof buf);
  return std::string(buf, static_cast<size_t>(n < 0 ? 0 : n < static_cast<int32_t>(sizeof buf) ? n : sizeof buf));
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)), ok_(true) {}  // NOLINT: implicit, as a return value
  Result(Error error) : error_(std::move(error)) {}         // NOLINT
  bool ok() const { return ok_; }
  const Error& error() const { return error_; }
  // The value; on an error, says why on stderr and aborts.
  T& value() & {
    Check();
    return value_;
  }
  T&& value() && {
    Check();
    return std::move(value_);
  }

 private:
  void Check() const {
    if (!ok_) {
      std::fprintf(stderr, "wasi_cuda error %d: %s\n", static_cast<int>(error_.code), error_.message.c_str());
      std::abort();
    }
  }
  T value_{};
  Error error_;
  bool ok_ = false;
};

struct Ok {};
using Status = Result<Ok>;

namespace detail {
// A WCU_ERR_* return as an Error, with the host's reason.
inline Error Fail(int32_t code) { return Error{code, LastError()}; }
inline Status Check(int32_t code) {
  if (code < 0) return Fail(code);
  return Ok{};
}
}  // namespace detail

// Waits for the instance's device work; the first asynchronous error (a device fault, a deadline).
inline Status Synchronize() { return detail::Check(wcu_synchronize()); }

// A device buffer of `size()` elements of T, freed when it goes out of scope. Move-only.
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "device buffers hold trivially copyable elements");

 public:
  DeviceBuffer() = default;
  // `count` zeroed elements.
  static Result<DeviceBuffer> Allocate(uint64_t count) {
    const int32_t h = wcu_mem_alloc(static_cast<int64_t>(count * sizeof(T)));
    if (h < 0) return detail::Fail(h);
    return DeviceBuffer(h, count);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : handle_(std::exchange(o.handle_, 0)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      handle_ = std::exchange(o.handle_, 0);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  int32_t handle() const { return handle_; }
  uint64_t size() const { return size_; }
  uint64_t bytes() const { return size_ * sizeof(T); }

  // Copies `from` to elements [at, at + from.size()) (ordered after earlier work; `from` may be
  // reused at once).
  Status Upload(std::span<const T> from, uint64_t at = 0) {
    return detail::Check(wcu_memcpy_htod(handle_, static_cast<int64_t>(at * sizeof(T)), from.data(),
                                         static_cast<int32_t>(from.size_bytes())));
  }
  // Waits for earlier work, then copies elements [at, at + to.size()) to `to`.
  Status Download(std::span<T> to, uint64_t at = 0) const {
    return detail::Check(wcu_memcpy_dtoh(to.data(), handle_, static_cast<int64_t>(at * sizeof(T)),
                                         static_cast<int32_t>(to.size_bytes())));
  }
  // Sets every byte of the buffer to `byte`.
  Status Fill(uint8_t byte) { return detail::Check(wcu_memset_d8(handle_, 0, byte, static_cast<int64_t>(bytes()))); }

 private:
  DeviceBuffer(int32_t handle, uint64_t size) : handle_(handle), size_(size) {}
  void Reset() {
    if (handle_ > 0) (void)wcu_mem_free(handle_);
    handle_ = 0;
    size_ = 0;
  }
  int32_t handle_ = 0;
  uint64_t size_ = 0;
};

// A launch's grid or block shape.
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

namespace detail {

template <class P, class A>
struct Arg;  // P: the kernel's parameter type; A: what is passed for it

// A pointer parameter takes a device buffer of a matching element type (T* takes DeviceBuffer<T>;
// const T* takes DeviceBuffer<T> too).
template <class T, class U>
struct Arg<T*, DeviceBuffer<U>> {
  static_assert(std::is_same_v<std::remove_const_t<T>, std::remove_const_t<U>>,
                "a pointer parameter takes a DeviceBuffer of the same element type");
  static_assert(!std::is_const_v<U> || std::is_const_v<T>, "a const buffer cannot go where the kernel writes");
  static wcu_arg Make(const DeviceBuffer<U>& b) { return wcu_arg_buffer(b.handle(), 0); }
};

template <class>
inline constexpr bool kNever = false;

// Anything else where the kernel takes a pointer: a guest's own memory is not the device's.
template <class T, class A>
struct Arg<T*, A> {
  static_assert(kNever<A>, "a pointer parameter takes a DeviceBuffer: guest pointers mean nothing on the device");
  static wcu_arg Make(const A&) { return {}; }
};

// A scalar parameter takes a value convertible to it without narrowing, passed by its size.
template <class P, class A>
struct Arg {
  static_assert(std::is_arithmetic_v<P>, "a kernel parameter is a pointer (give a DeviceBuffer) or a number");
  static_assert(!std::is_pointer_v<std::decay_t<A>>, "a number parameter takes a number, not a pointer");
  static wcu_arg Make(const A& a) {
    const P v{a};  // braces: a narrowing conversion does not compile
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    const uint32_t kind = sizeof(P) == 1   ? WCU_ARG_B8
                          : sizeof(P) == 2 ? WCU_ARG_B16
                          : sizeof(P) == 4 ? WCU_ARG_B32
                                           : WCU_ARG_B64;
    return wcu_arg{kind, 0, bits};
  }
};

}  // namespace detail

// A kernel whose parameters are Params... (as declared in the .cu: float*, unsigned, ...).
template <class... Params>
class Kernel {
 public:
  explicit Kernel(int32_t handle = 0) : handle_(handle) {}
  int32_t handle() const { return handle_; }

  // Enqueues the kernel; returns without waiting (a later Synchronize or Download waits).
  template <class... Args>
  Status Launch(Dim3 grid, Dim3 block, const Args&... args) const {
    return LaunchShared(grid, block, 0, args...);
  }
  // The same, with `shared_bytes` of dynamic shared memory.
  template <class... Args>
  Status LaunchShared(Dim3 grid, Dim3 block, uint32_t shared_bytes, const Args&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params), "a launch passes one argument per kernel parameter");
    const wcu_arg records[sizeof...(Params) + 1] = {detail::Arg<Params, std::remove_cvref_t<Args>>::Make(args)...};
    return detail::Check(wcu_launch(handle_, static_cast<int32_t>(grid.x), static_cast<int32_t>(grid.y),
                                    static_cast<int32_t>(grid.z), static_cast<int32_t>(block.x),
                                    static_cast<int32_t>(block.y), static_cast<int32_t>(block.z),
                                    static_cast<int32_t>(shared_bytes), records, sizeof...(Params)));
  }

 private:
  int32_t handle_;
};

// Loaded PTX, unloaded when it goes out of scope (launches already queued keep it alive). Move-only.
class Module {
 public:
  Module() = default;
  static Result<Module> Load(const void* ptx, size_t len) {
    const int32_t h = wcu_module_load(ptx, static_cast<int32_t>(len));
    if (h < 0) return detail::Fail(h);
    return Module(h);
  }
  Module(Module&& o) noexcept : handle_(std::exchange(o.handle_, 0)) {}
  Module& operator=(Module&& o) noexcept {
    if (this != &o) {
      Reset();
      handle_ = std::exchange(o.handle_, 0);
    }
    return *this;
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() { Reset(); }

  // The kernel `name` (an .entry; extern "C" in the .cu keeps its name), typed by its parameters.
  template <class... Params>
  Result<wcu::Kernel<Params...>> Kernel(std::string_view name) const {
    const int32_t h = wcu_function_get(handle_, name.data(), static_cast<int32_t>(name.size()));
    if (h < 0) return detail::Fail(h);
    return wcu::Kernel<Params...>(h);
  }
  int32_t handle() const { return handle_; }

 private:
  explicit Module(int32_t handle) : handle_(handle) {}
  void Reset() {
    if (handle_ > 0) (void)wcu_module_unload(handle_);
    handle_ = 0;
  }
  int32_t handle_ = 0;
};

// The device the instance got.
inline Result<wcu_device_info_t> DeviceInfo() {
  wcu_device_info_t info{};
  const int32_t n = wcu_device_info(&info, sizeof info);
  if (n < 0) return detail::Fail(n);
  return info;
}

}  // namespace wcu

#endif  // GPUWASM_WASI_CUDA_HPP_
