#include "interp_reference.h"

#include <wabt/binary-reader.h>
#include <wabt/interp/binary-reader-interp.h>
#include <wabt/interp/interp.h>

namespace gpuwasm::testing {

InterpRaw InterpRunRaw(const std::string& bytes, const std::string& export_name) {
  using namespace wabt::interp;
  InterpRaw out;
  Store store;
  ModuleDesc desc;
  wabt::Errors errors;
  wabt::Features features;
  wabt::ReadBinaryOptions options(features, nullptr, false, true, false);
  if (wabt::Failed(ReadBinaryInterp("m", bytes.data(), bytes.size(), options, &errors, &desc))) {
    out.error = "interp could not read the module";
    return out;
  }
  Module::Ptr module = Module::New(store, desc);
  RefVec imports;
  Trap::Ptr trap;
  Instance::Ptr instance = Instance::Instantiate(store, module.ref(), imports, &trap);
  if (!instance) {
    out.error = "interp could not instantiate: " + (trap ? trap->message() : std::string());
    return out;
  }
  Memory::Ptr memory;
  Func::Ptr func;
  for (size_t i = 0; i < module->export_types().size(); ++i) {
    const auto& e = module->export_types()[i];
    if (e.name == export_name) func = store.UnsafeGet<Func>(instance->exports()[i]);
    if (e.name == "memory") memory = store.UnsafeGet<Memory>(instance->exports()[i]);
  }
  if (!func) {
    out.error = "interp: no export " + export_name;
    return out;
  }
  Values params, results;
  if (wabt::Failed(func->Call(store, params, results, &trap))) {
    out.trapped = true;
    out.trap_message = trap ? trap->message() : "trap";
  } else if (!results.empty()) {
    out.value = results[0].Get<uint32_t>();
  }
  if (memory) {
    out.has_memory = true;
    out.memory.assign(reinterpret_cast<const char*>(memory->UnsafeData()), memory->ByteSize());
  }
  return out;
}

}  // namespace gpuwasm::testing
