#include "host/kernel_registry.h"

#include <algorithm>
#include <span>
#include <vector>

#include "common/names.h"
#include "common/sha256.h"
#include "host/wasi_cuda.h"
#include "ptx/instrument.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace gpuwasm::host {

Result<int32_t> KernelRegistry::LoadModule(std::string ptx) {
  GPUWASM_ASSIGN_OR_RETURN(std::shared_ptr<const device::Module> m, cache_->Load(ptx));
  uint64_t bytes = ptx.size();
  int32_t h = modules_.Add({std::move(m), std::move(ptx)});
  if (h == 0) return Status::ResourceExhausted("too many modules");
  retained_.fetch_add(bytes, std::memory_order_relaxed);
  return h;
}

bool KernelRegistry::UnloadModule(int32_t module) {
  ModuleEntry* e = modules_.Get(module);
  if (e == nullptr) return false;
  retained_.fetch_sub(e->ptx.size(), std::memory_order_relaxed);
  std::vector<int32_t> dead;
  kernels_.ForEach([&](int32_t h, GuestKernel& k) {
    if (k.module == module) dead.push_back(h);
  });
  for (int32_t h : dead) kernels_.Remove(h);
  return modules_.Remove(module);
}

namespace {

// Why `name` is not a kernel of a module with `kernels`, and what to do: the kernels there are,
// and, when one is `name` as C++ mangles it (nvcc without extern "C"), how to keep the name.
std::string MissingKernel(std::string_view name, std::vector<std::string> kernels) {
  std::string out = "no kernel named '" + std::string(name) + "' in the module";
  if (kernels.empty()) return out + "; it has no kernels (.entry)";
  std::sort(kernels.begin(), kernels.end());  // the mangled-name hint below names the first match
  out += "; its kernels: " + ListNames(kernels);
  const std::string mangled = std::to_string(name.size()) + std::string(name);
  for (const std::string& k : kernels) {
    if (k.rfind("_Z", 0) == 0 && k.find(mangled) != std::string::npos) {
      return out + " ('" + k + "' is '" + std::string(name) +
             "' as C++ names it: declare the kernel extern \"C\" to keep its name, or ask for '" + k + "')";
    }
  }
  return out;
}

}  // namespace

Result<int32_t> KernelRegistry::GetKernel(int32_t module, std::string_view name) {
  ModuleEntry* e = modules_.Get(module);
  if (e == nullptr) return Status::InvalidArgument("bad module handle " + std::to_string(module));
  Result<std::shared_ptr<const device::Kernel>> found = e->module->GetKernel(name);
  if (!found.ok()) {
    if (found.status().code() != StatusCode::kNotFound) return found.status();
    return Status::NotFound(MissingKernel(name, e->module->KernelNames()));
  }
  std::shared_ptr<const device::Kernel> k = std::move(*found);
  GuestKernel entry;
  entry.kernel = std::move(k);
  entry.module = module;
  entry.sig = &entry.kernel->signature();
  // The passes add the hidden parameters after the kernel's own, in order; a guest's PTX cannot
  // declare names with their prefix (the passes refuse it).
  std::span<const device::KernelParam> params = entry.sig->params;
  if (params.size() >= 3 && params[params.size() - 3].name == ptx::kHiddenParams[0]) {
    entry.hidden_offset = static_cast<uint32_t>(params[params.size() - 3].offset);
    params = params.first(params.size() - 3);
  }
  for (const device::KernelParam& p : params) {
    uint32_t kind = WCU_ARG_BUFFER;  // no scalar record fits
    for (uint32_t k = WCU_ARG_B8; k <= WCU_ARG_B64; ++k) {
      if (ScalarArgBytes(k) == p.size) kind = k;
    }
    entry.args.push_back({static_cast<uint32_t>(p.offset), static_cast<uint32_t>(p.size), kind});
  }
  int32_t h = kernels_.Add(std::move(entry));
  if (h == 0) return Status::ResourceExhausted("too many kernel handles");
  return h;
}

std::string KernelRegistry::SourceLine(std::string_view kernel, uint32_t ptx_line) {
  std::string found;
  modules_.ForEach([&](int32_t, ModuleEntry& e) {
    if (!found.empty()) return;
    std::map<std::string, std::string> files;  // .file number -> its base name
    std::string loc;
    bool in_kernel = false;
    size_t begin = 0;
    for (uint32_t line = 1; begin < e.ptx.size() && line <= ptx_line; ++line) {
      size_t end = e.ptx.find('\n', begin);
      if (end == std::string::npos) end = e.ptx.size();
      std::string_view text(e.ptx.data() + begin, end - begin);
      begin = end + 1;
      text.remove_prefix(std::min(text.find_first_not_of(" \t"), text.size()));
      auto word = [&text](size_t i) {  // the i-th blank-separated word
        size_t at = 0;
        for (size_t k = 0;; ++k) {
          at = text.find_first_not_of(" \t", at);
          if (at == std::string_view::npos) return std::string_view();
          size_t stop = std::min(text.find_first_of(" \t", at), text.size());
          if (k == i) return text.substr(at, stop - at);
          at = stop;
        }
      };
      if (text.rfind(".file", 0) == 0) {
        std::string_view name = word(2);
        if (name.size() >= 2 && name.front() == '"') name = name.substr(1, name.find('"', 1) - 1);
        files[std::string(word(1))] = std::string(name.substr(std::min(name.rfind('/') + 1, name.size())));
      } else if (text.find(".entry") != std::string_view::npos) {
        const size_t at = text.find(kernel);
        in_kernel =
            at != std::string_view::npos && at + kernel.size() <= text.size() &&
            (at + kernel.size() == text.size() || text[at + kernel.size()] == '(' || text[at + kernel.size()] == ' ');
        loc.clear();
      } else if (in_kernel && text.rfind(".loc", 0) == 0) {
        auto file = files.find(std::string(word(1)));
        if (file != files.end()) loc = file->second + ":" + std::string(word(2));
      }
    }
    if (in_kernel) found = loc;
  });
  return found;
}

void KernelRegistry::Clear() {
  kernels_.Clear();
  modules_.Clear();
  retained_.store(0, std::memory_order_relaxed);
}

}  // namespace gpuwasm::host
