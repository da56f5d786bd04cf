// SharedLibrary: sole ownership of a library loaded with dlopen (RTLD_NOW | RTLD_LOCAL), closed
// when the owner goes. Move-only. Used for the CUDA driver, NVML, compiled guest modules and the
// CPU device's native kernels: whatever a symbol points into lives as long as its SharedLibrary.
// Thread-safety: Symbol() may be called from any thread; moving or destroying needs no other user.
// A library opened with Unload::kNever stays loaded for the life of the process (libcuda: its
// threads and atexit handlers outlive any one owner).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <utility>

#include "common/status.h"

namespace gpuwasm {

class SharedLibrary {
 public:
  enum class Unload : uint8_t { kWithOwner, kNever };

  SharedLibrary() = default;
  SharedLibrary(SharedLibrary&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)), unload_(o.unload_) {}
  SharedLibrary& operator=(SharedLibrary&& o) noexcept {
    if (this != &o) {
      Close();
      handle_ = std::exchange(o.handle_, nullptr);
      unload_ = o.unload_;
    }
    return *this;
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary() { Close(); }

  // Loads `path` (a file name is looked up the way dlopen does). Unavailable, with dlerror()'s
  // text, when it cannot be loaded.
  static Result<SharedLibrary> Open(const std::string& path, Unload unload = Unload::kWithOwner) {
    SharedLibrary lib;
    lib.unload_ = unload;
    lib.handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle_ == nullptr) {
      const char* e = dlerror();
      return Status::Unavailable(e != nullptr ? e : "dlopen failed: " + path);
    }
    return lib;
  }

  bool loaded() const { return handle_ != nullptr; }
  void* handle() const { return handle_; }  // borrowed, for dlinfo
  // The address of `name`, or nullptr when the library has no such symbol.
  void* Symbol(const char* name) const { return handle_ != nullptr ? dlsym(handle_, name) : nullptr; }
  // Symbol() as a T (a function or object pointer type).
  template <typename T>
  T Get(const char* name) const {
    return reinterpret_cast<T>(Symbol(name));
  }

 private:
  void Close() {
    void* h = std::exchange(handle_, nullptr);
    if (h != nullptr && unload_ == Unload::kWithOwner) dlclose(h);
  }

  void* handle_ = nullptr;
  Unload unload_ = Unload::kWithOwner;
};

}  // namespace gpuwasm
