#include "wasm/translate.h"

#include <errno.h>
#include <unistd.h>
#include <wabt/apply-names.h>
#include <wabt/binary-reader-ir.h>
#include <wabt/binary-reader.h>
#include <wabt/c-writer.h>
#include <wabt/cast.h>
#include <wabt/feature.h>
#include <wabt/generate-names.h>
#include <wabt/ir.h>
#include <wabt/stream.h>
#include <wabt/validator.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>
#include <unordered_map>

#include "common/subprocess.h"
#include "wasm/backtrace.h"

namespace gpuwasm::wasm {
namespace {

// The feature set wasm2c 1.0.32 translates correctly and our runtime supports.
wabt::Features SupportedFeatures() {
  wabt::Features f;
#define WABT_FEATURE(variable, flag, default_, help) f.disable_##variable();
#include <wabt/feature.def>
#undef WABT_FEATURE
  f.enable_mutable_globals();
  f.enable_sat_float_to_int();
  f.enable_sign_extension();
  f.enable_multi_value();
  f.enable_bulk_memory();
  f.enable_reference_types();
  return f;
}

struct UnsupportedFeature {
  const char* name;  // what we tell the user
  void (wabt::Features::*enable)();
  // libwabt 1.0.32's validator is not safe with every proposal enabled: with function references
  // (and GC) a call_ref reaches an assert() in its type checker, i.e. an abort on untrusted input
  // (found by fuzz_wasm; fuzz/regressions/wasm/). Those are probed by reading only.
  bool validate = true;
};

const UnsupportedFeature kUnsupported[] = {
    {"SIMD (simd128)", &wabt::Features::enable_simd},
    {"threads (shared memory, atomics)", &wabt::Features::enable_threads},
    {"memory64", &wabt::Features::enable_memory64},
    {"tail calls", &wabt::Features::enable_tail_call},
    {"exception handling", &wabt::Features::enable_exceptions},
    {"multiple memories", &wabt::Features::enable_multi_memory},
    {"relaxed SIMD", &wabt::Features::enable_relaxed_simd},
    {"extended constant expressions", &wabt::Features::enable_extended_const},
    {"function references", &wabt::Features::enable_function_references, false},
    {"garbage collection", &wabt::Features::enable_gc, false},
};

std::string FormatErrors(const wabt::Errors& errors) {
  std::ostringstream out;
  size_t n = 0;
  for (const wabt::Error& e : errors) {
    if (n++ == 5) {
      out << "; ... (" << errors.size() - 5 << " more)";
      break;
    }
    if (n > 1) out << "; ";
    out << "at offset 0x" << std::hex << e.loc.offset << std::dec << ": " << e.message;
  }
  return out.str();
}

}  // namespace

Status CheckExpansionLimits(const wabt::Module& module) {
  const TranslateLimits l;
  auto over = [](const std::string& what, uint64_t n, uint64_t max, const char* name) {
    return Status::ResourceExhausted("module rejected: " + what + " " + std::to_string(n) +
                                     "; gpuwasm allows at most " + std::to_string(max) + " (" + name + ")");
  };
  if (module.funcs.size() > l.max_functions) {
    return over("it has functions:", module.funcs.size(), l.max_functions, "max_functions");
  }
  uint64_t all_locals = 0;
  for (size_t i = 0; i < module.funcs.size(); ++i) {
    uint64_t locals = 0;
    for (const auto& [type, count] : module.funcs[i]->local_types.decls()) locals += count;
    if (locals > l.max_locals_per_function) {
      return over("function " + std::to_string(i) + " declares locals:", locals, l.max_locals_per_function,
                  "max_locals_per_function");
    }
    all_locals += locals;
  }
  if (all_locals > l.max_locals) return over("its functions declare locals:", all_locals, l.max_locals, "max_locals");
  for (const wabt::Table* t : module.tables) {
    if (t->elem_limits.initial > l.max_table_entries) {
      return over("a table starts with entries:", t->elem_limits.initial, l.max_table_entries, "max_table_entries");
    }
  }
  if (module.globals.size() > l.max_globals)
    return over("it has globals:", module.globals.size(), l.max_globals, "max_globals");
  if (module.data_segments.size() > l.max_data_segments) {
    return over("it has data segments:", module.data_segments.size(), l.max_data_segments, "max_data_segments");
  }
  if (module.elem_segments.size() > l.max_elem_segments) {
    return over("it has element segments:", module.elem_segments.size(), l.max_elem_segments, "max_elem_segments");
  }
  uint64_t elems = 0;
  for (const wabt::ElemSegment* e : module.elem_segments) elems += e->elem_exprs.size();
  if (elems > l.max_table_entries)
    return over("its element segments hold entries:", elems, l.max_table_entries, "max_table_entries");
  return Status::Ok();
}

namespace {

// Reads and validates with `features`; true on success. With `limits`, a module over the
// expansion limits stops after reading, its error in *limits.
bool ReadAndValidate(std::span<const uint8_t> wasm, const wabt::Features& features, wabt::Module* module,
                     wabt::Errors* errors, bool validate = true, Status* limits = nullptr) {
  wabt::ReadBinaryOptions options(features, nullptr, /*read_debug_names=*/false,
                                  /*stop_on_first_error=*/true,
                                  /*fail_on_custom_section_error=*/false);
  if (wabt::Failed(wabt::ReadBinaryIr("guest.wasm", wasm.data(), wasm.size(), options, errors, module))) {
    return false;
  }
  if (limits != nullptr) {
    *limits = CheckExpansionLimits(*module);
    if (!limits->ok()) return false;
  }
  if (!validate) return true;
  wabt::ValidateOptions vopts(features);
  return wabt::Succeeded(wabt::ValidateModule(module, errors, vopts));
}

char TypeLetter(wabt::Type t) {
  switch (t) {
    case wabt::Type::I32: return 'i';
    case wabt::Type::I64: return 'I';
    case wabt::Type::F32: return 'f';
    case wabt::Type::F64: return 'F';
    default: return '?';
  }
}

std::string Letters(const wabt::TypeVector& types) {
  std::string s;
  for (wabt::Type t : types) s.push_back(TypeLetter(t));
  return s;
}

// Export names end up inside C comments and string literals in wasm2c's output, so only a
// conservative character set is accepted (a '*/' would otherwise inject C code).
bool SafeName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-' || c == '$';
    if (!ok) return false;
  }
  return true;
}

Status CheckModule(const wabt::Module& module, const std::vector<ImportSpec>& allowed) {
  std::vector<std::string> problems;
  for (const wabt::Import* imp : module.imports) {
    std::string what = imp->module_name + "." + imp->field_name;
    if (!SafeName(imp->module_name) || !SafeName(imp->field_name)) {
      problems.push_back("import with unsupported characters in its name");
      continue;
    }
    if (imp->kind() != wabt::ExternalKind::Func) {
      problems.push_back("import " + what + " is not a function (only function imports are allowed)");
      continue;
    }
    const auto* fi = wabt::cast<wabt::FuncImport>(imp);
    const wabt::FuncSignature& sig = fi->func.decl.sig;
    const ImportSpec* spec = nullptr;
    for (const ImportSpec& s : allowed) {
      if (s.module == imp->module_name && s.name == imp->field_name) spec = &s;
    }
    if (spec == nullptr) {
      problems.push_back("unknown import " + what);
      continue;
    }
    std::string params = Letters(sig.param_types), results = Letters(sig.result_types);
    if (params != spec->params || results != spec->results) {
      problems.push_back("import " + what + " has signature (" + params + ")->(" + results + "), the host provides (" +
                         spec->params + ")->(" + spec->results + ")");
    }
  }
  for (const wabt::Export* exp : module.exports) {
    if (!SafeName(exp->name)) {
      problems.push_back("export name '" + exp->name.substr(0, 32) +
                         "' has characters outside [A-Za-z0-9_.$-] or is too long");
    }
  }
  if (problems.empty()) return Status::Ok();
  std::string msg = "module rejected: ";
  for (size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i];
  return Status::InvalidArgument(msg);
}

Status ParseCheckedInProcess(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports,
                             wabt::Module* module);

// Debian's libwabt (1.0.32) has reachable assert()s on malformed input (fuzz_wasm found one in
// BinaryReaderIR::OnEndExpr: wasm-validate itself aborts on it). A deploy must never abort the
// server, so a module is first read by a fresh copy of this program (the reader child below); one
// that kills the reader is refused. A fresh copy (exec), never a forked one that reads: a forked
// child of a multi-threaded process can hang on a lock another thread held at the fork (CI's ASan
// run did, in ASan's allocator).
constexpr const char* kReaderChildEnv = "GPUWASM_WASM_READER_CHILD";

// What the reader child does, however it was started: read the module (the reader and validator,
// and the feature probes, all of which may hit a wabt assert) and exit 0 if nothing aborted. No
// crash handler the process installed (a crash reporter, a fuzzer's) may report such an abort as
// the host's own crash, so the child dies with the default handlers.
[[noreturn]] void ReadModuleAndExit(std::span<const uint8_t> wasm) {
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  wabt::Module probe;
  (void)ParseCheckedInProcess(wasm, {}, &probe);
  _exit(0);
}

// Reads `wasm` in a reader child: a fresh copy of this program (/proc/self/exe) with the module on
// its stdin, started like every other child (RunLimited), so a module that makes wabt loop or
// allocate without end costs a bounded CPU time, address space and wall time.
Status ReadInChild(std::span<const uint8_t> wasm) {
  ProcessLimits limits;
  limits.cpu_seconds = 10;
  limits.wall = std::chrono::milliseconds(30'000);
  // A sanitizer's runtime reserves terabytes of address space at start: no RLIMIT_AS under one.
  limits.address_space_bytes = kSanitizedBuild ? 0 : 4ull << 30;
  limits.max_output_bytes = 4096;
  ProcessInput input;
  input.program = "/proc/self/exe";
  input.stdin_bytes = wasm;
  input.set_env = {std::string(kReaderChildEnv) + "=1"};
  GPUWASM_ASSIGN_OR_RETURN(ProcessResult r, RunLimited({"gpuwasm-wasm-reader"}, limits, input));
  if (!r.signaled && r.exit_code == 0) return Status::Ok();
  if (!r.signaled && r.exit_code == 127 && r.output.find("exec failed") != std::string::npos) {
    return Status::Unavailable("cannot start the wasm reader child (/proc/self/exe)");
  }
  if (r.timed_out || r.cpu_limit) {
    return Status::InvalidArgument("malformed wasm module: the wasm reader (wabt) did not finish it within " +
                                   std::string(r.timed_out ? "30 s" : "10 CPU seconds"));
  }
  return Status::InvalidArgument("malformed wasm module: the wasm reader (wabt) fails on it (" +
                                 std::string(r.signaled ? "signal " + std::to_string(r.signal) : "abnormal exit") +
                                 ")");
}

// Set in the translator child (TranslatorMain): it is the separate process already.
bool g_translator_process = false;

Status ParseChecked(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports, wabt::Module* module) {
  if (wasm.size() < 8) return Status::InvalidArgument("not a wasm module: shorter than its header");
  if (g_translator_process) return ParseCheckedInProcess(wasm, imports, module);
  GPUWASM_RETURN_IF_ERROR(ReadInChild(wasm));
  return ParseCheckedInProcess(wasm, imports, module);
}

Status ParseCheckedInProcess(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports,
                             wabt::Module* module) {
  wabt::Errors errors;
  Status limits;
  if (!ReadAndValidate(wasm, SupportedFeatures(), module, &errors, /*validate=*/true, &limits)) {
    if (!limits.ok()) return limits;
    // Name the feature when enabling exactly one unsupported feature makes the module valid.
    for (const UnsupportedFeature& uf : kUnsupported) {
      wabt::Features f = SupportedFeatures();
      (f.*uf.enable)();
      if (uf.enable == &wabt::Features::enable_relaxed_simd) f.enable_simd();
      wabt::Module probe;
      wabt::Errors ignored;
      if (ReadAndValidate(wasm, f, &probe, &ignored, uf.validate)) {
        return Status::Unsupported(std::string("module uses ") + uf.name + ", which gpuwasm does not support");
      }
    }
    return Status::InvalidArgument("invalid wasm module: " + FormatErrors(errors));
  }
  return CheckModule(*module, imports);
}

struct HeaderFacts {
  std::vector<std::string> import_instance_types;  // "struct Z_x_instance_t*" per instantiate arg
  std::string instance_type;                       // "Z_m_instance_t"
  std::string prefix;                              // "Z_m"
  bool has_memory_export = false;
  struct Fn {
    std::string name, symbol, ret;
    bool no_args;
  };
  std::vector<Fn> exports;
};

Result<HeaderFacts> ParseHeader(const std::string& h, const std::string& module_name) {
  HeaderFacts f;
  f.prefix = "Z_" + module_name;
  f.instance_type = f.prefix + "_instance_t";
  std::regex inst("void " + f.prefix + "_instantiate\\(" + f.instance_type + "\\*(.*)\\);");
  std::regex exp_comment("^/\\* export: '([A-Za-z0-9_.$-]+)' \\*/$");
  std::regex proto("^(\\S+)\\s+(Z_\\w+)\\(" + f.instance_type + "\\*(?: instance)?(.*)\\);$");
  std::istringstream in(h);
  std::string line, pending_export;
  bool saw_instantiate = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, inst)) {
      saw_instantiate = true;
      std::string rest = m[1];
      std::regex arg("struct (Z_\\w+_instance_t)\\*");
      for (auto it = std::sregex_iterator(rest.begin(), rest.end(), arg); it != std::sregex_iterator(); ++it) {
        f.import_instance_types.push_back((*it)[1]);
      }
    } else if (std::regex_match(line, m, exp_comment)) {
      pending_export = m[1];
    } else if (!pending_export.empty() && std::regex_match(line, m, proto)) {
      if (m[1] == "wasm_rt_memory_t*") {
        if (pending_export == "memory") f.has_memory_export = true;
      } else if (m[1] != "wasm_rt_funcref_table_t*" && m[1] != "wasm_rt_externref_table_t*") {
        bool is_global = m[1].str().back() == '*';  // exported globals are pointers
        if (!is_global) f.exports.push_back({pending_export, m[2], m[1], m[3].str().empty()});
      }
      pending_export.clear();
    }
  }
  if (!saw_instantiate) return Status::Internal("wasm2c header without an instantiate function");
  return f;
}

std::string Glue(const HeaderFacts& f) {
  std::ostringstream g;
  g << "\n/* ---- gpuwasm glue: the only symbols this module exports ---- */\n"
    << "#define GPUWASM_EXPORT __attribute__((visibility(\"default\")))\n"
    << "typedef struct { const char* name; int kind; void (*fn)(void); } gpuwasm_export_t;\n"
    << "GPUWASM_EXPORT const uint32_t gpuwasm_glue_version = 1;\n"
    << "GPUWASM_EXPORT size_t gpuwasm_instance_size(void) { return sizeof(" << f.instance_type << "); }\n"
    << "GPUWASM_EXPORT void gpuwasm_init_module(void) { " << f.prefix << "_init_module(); }\n"
    << "GPUWASM_EXPORT void gpuwasm_instantiate(void* instance, void* host) {\n  (void)host;\n  " << f.prefix
    << "_instantiate((" << f.instance_type << "*)instance";
  for (const std::string& t : f.import_instance_types) g << ", (struct " << t << "*)host";
  g << ");\n}\n"
    << "GPUWASM_EXPORT void gpuwasm_free(void* instance) { " << f.prefix << "_free((" << f.instance_type
    << "*)instance); }\n"
    << "GPUWASM_EXPORT wasm_rt_memory_t* gpuwasm_memory(void* instance) { ";
  if (f.has_memory_export) {
    g << "return " << f.prefix << "Z_memory((" << f.instance_type << "*)instance); }\n";
  } else {
    g << "(void)instance; return NULL; }\n";
  }
  g << "GPUWASM_EXPORT const gpuwasm_export_t gpuwasm_exports[] = {\n";
  for (const HeaderFacts::Fn& fn : f.exports) {
    int kind = 2;
    if (fn.no_args && fn.ret == "void") kind = 0;
    if (fn.no_args && fn.ret == "u32") kind = 1;
    g << "  {\"" << fn.name << "\", " << kind << ", (void (*)(void))" << fn.symbol << "},\n";
  }
  g << "  {NULL, 0, NULL},\n};\n";
  return g.str();
}

// Interrupt checks: after every FUNC_PROLOGUE (function entry) and at every loop label.
std::string InsertInterruptChecks(const std::string& c, size_t* functions, size_t* checks) {
  std::ostringstream out;
  std::istringstream in(c);
  std::string line;
  std::regex loop_label("^\\s*w2c_L\\d+:\\s*$");
  while (std::getline(in, line)) {
    if (line == "  FUNC_PROLOGUE;") {
      // The flag's address is read from TLS once per call; loop headers then cost one load.
      out << "  FUNC_PROLOGUE; volatile uint32_t* const gpuwasm_flag = gpuwasm_rt_interrupt_flag; "
             "GPUWASM_CHECK_INTERRUPT();\n";
      ++*functions;
      ++*checks;
    } else if (line.find("w2c_L") != std::string::npos && std::regex_match(line, loop_label)) {
      out << line << " GPUWASM_CHECK_INTERRUPT();\n";
      ++*checks;
    } else {
      out << line << '\n';
    }
  }
  return out.str();
}

// tcc (the quick tier, engine.h) has no thread-locals and none of GCC's bit-counting builtins:
// the flag is read through a call, and the builtins wasm2c's macros use are functions here.
constexpr const char* kPrelude =
    "/* gpuwasm: interrupt checks (deadline watchdog) reach the instance's flag through a\n"
    " * thread-local pointer owned by the host executable. */\n"
    "#include <stddef.h>\n#include <stdint.h>\n"
    "#ifdef __TINYC__\n"
    "volatile uint32_t* gpuwasm_rt_interrupt_flag_address(void);\n"
    "#define gpuwasm_rt_interrupt_flag (gpuwasm_rt_interrupt_flag_address())\n"
    "static int gpuwasm_clz64(uint64_t x) { int n = 0; while (!(x >> 63)) { x <<= 1; ++n; } return n; }\n"
    "static int gpuwasm_ctz64(uint64_t x) { int n = 0; while (!(x & 1)) { x >>= 1; ++n; } return n; }\n"
    "static int gpuwasm_popcount64(uint64_t x) { int n = 0; for (; x; x &= x - 1) ++n; return n; }\n"
    "#define __builtin_clz(x) (gpuwasm_clz64((uint64_t)(uint32_t)(x)) - 32)\n"
    "#define __builtin_clzll(x) gpuwasm_clz64((uint64_t)(x))\n"
    "#define __builtin_ctz(x) gpuwasm_ctz64((uint64_t)(uint32_t)(x))\n"
    "#define __builtin_ctzll(x) gpuwasm_ctz64((uint64_t)(x))\n"
    "#define __builtin_popcount(x) gpuwasm_popcount64((uint64_t)(uint32_t)(x))\n"
    "#define __builtin_popcountll(x) gpuwasm_popcount64((uint64_t)(x))\n"
    "#define __builtin_expect(x, y) (x)\n"
    "#else\n"
    "extern __thread volatile uint32_t* gpuwasm_rt_interrupt_flag "
    "__attribute__((tls_model(\"initial-exec\")));\n"
    "#endif\n"
    "void gpuwasm_rt_interrupted(void) __attribute__((noreturn));\n"
    "#define GPUWASM_CHECK_INTERRUPT() \\\n"
    "  do { if (__builtin_expect(*gpuwasm_flag != 0, 0)) gpuwasm_rt_interrupted(); } while (0)\n";

}  // namespace

Status Validate(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports) {
  wabt::Module module;
  return ParseChecked(wasm, imports, &module);
}

Result<Translation> Translate(std::span<const uint8_t> wasm, const std::vector<ImportSpec>& imports,
                              bool interrupt_checks) {
  wabt::Module module;
  GPUWASM_RETURN_IF_ERROR(ParseChecked(wasm, imports, &module));
  if (wabt::Failed(wabt::GenerateNames(&module))) return Status::Internal("wasm2c: naming failed");
  (void)wabt::ApplyNames(&module);
  wabt::MemoryStream c_stream, h_stream;
  wabt::WriteCOptions options;
  const std::string module_name = "guest";
  options.module_name = module_name;
  if (wabt::Failed(wabt::WriteC(&c_stream, &h_stream, "module.h", &module, options))) {
    return Status::Internal("wasm2c could not translate the module");
  }
  Translation t;
  const auto& cbuf = c_stream.output_buffer().data;
  const auto& hbuf = h_stream.output_buffer().data;
  std::string c(cbuf.begin(), cbuf.end());
  t.header.assign(hbuf.begin(), hbuf.end());
  GPUWASM_ASSIGN_OR_RETURN(HeaderFacts facts, ParseHeader(t.header, module_name));
  for (const HeaderFacts::Fn& fn : facts.exports) {
    ExportKind kind = ExportKind::kUnsupported;
    if (fn.no_args && fn.ret == "void") kind = ExportKind::kVoid;
    if (fn.no_args && fn.ret == "u32") kind = ExportKind::kI32;
    t.exports.push_back({fn.name, kind});
  }
  // Names are read here, by our own bounded reader, not by wabt: they never reach the C.
  ModuleNames names{ReadFunctionNames(wasm), {}};
  std::unordered_map<std::string_view, std::string_view> symbol_of;  // export name -> its wrapper
  for (const HeaderFacts::Fn& fn : facts.exports) symbol_of.emplace(fn.name, fn.symbol);
  for (const wabt::Export* e : module.exports) {
    auto it = e->kind == wabt::ExternalKind::Func ? symbol_of.find(e->name) : symbol_of.end();
    if (it != symbol_of.end()) names.export_symbols.push_back({module.GetFuncIndex(e->var), std::string(it->second)});
  }
  t.function_names = FormatModuleNames(names);
  t.c_source = std::string(kPrelude) +
               (interrupt_checks ? InsertInterruptChecks(c, &t.functions, &t.interrupt_checks) : c) + Glue(facts);
  return t;
}

std::string EncodeImports(const std::vector<ImportSpec>& imports) {
  std::string s;
  for (const ImportSpec& i : imports) s += i.module + ":" + i.name + ":" + i.params + ":" + i.results + ",";
  return s;
}

std::vector<ImportSpec> DecodeImports(std::string_view s) {
  std::vector<ImportSpec> out;
  while (!s.empty()) {
    size_t end = s.find(',');
    std::string_view one = s.substr(0, end);
    std::string f[4];
    for (int k = 0; k < 4; ++k) {
      size_t c = k < 3 ? one.find(':') : one.size();
      f[k] = std::string(one.substr(0, c));
      one = c < one.size() ? one.substr(c + 1) : std::string_view();
    }
    out.push_back({f[0], f[1], f[2], f[3]});
    s = end == std::string_view::npos ? std::string_view() : s.substr(end + 1);
  }
  return out;
}

int TranslatorMain(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: gpuwasm __translate DIR IMPORTS CHECKS (internal: the engine's translator child)\n");
    return 64;
  }
  g_translator_process = true;
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  std::string dir = argv[2];
  auto write = [&](const std::string& name, const std::string& data) {
    std::FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
    bool ok = f != nullptr && std::fwrite(data.data(), 1, data.size(), f) == data.size();
    if (f != nullptr) ok = std::fclose(f) == 0 && ok;
    return ok;
  };
  std::string bytes;
  {
    std::FILE* f = std::fopen((dir + "/module.wasm").c_str(), "rb");
    if (f == nullptr) return 66;
    char buf[1 << 16];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
    std::fclose(f);
  }
  Result<Translation> t = Translate(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                                    DecodeImports(argv[3]), std::string_view(argv[4]) == "1");
  if (!t.ok()) {
    write("error.txt", std::string(StatusCodeName(t.status().code())) + "\n" + t.status().message());
    return 65;
  }
  std::string exports;
  for (const ExportInfo& e : t->exports) exports += std::to_string(static_cast<int>(e.kind)) + " " + e.name + "\n";
  if (!write("module.c", t->c_source) || !write("module.h", t->header) || !write("exports.txt", exports) ||
      !write("names.txt", t->function_names)) {
    return 73;
  }
  return 0;
}

namespace {

// The reader child: this program started again by ReadInChild with kReaderChildEnv set, the
// module on its stdin. Runs from a static initializer, so it works in every program that can
// deploy (gpuwasm, tests, fuzzers), before their main; it is the last definition of this file,
// after everything it uses.
[[noreturn]] void RunReaderChild() {
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  ReadModuleAndExit(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

const bool kIsReaderChild = [] {
  const char* v = std::getenv(kReaderChildEnv);
  if (v != nullptr && std::strcmp(v, "1") == 0) RunReaderChild();
  return false;
}();

}  // namespace

}  // namespace gpuwasm::wasm
