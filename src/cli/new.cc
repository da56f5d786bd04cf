// `gpuwasm new NAME`: writes a guest project of one's own (a C guest, its CUDA kernel with PTX for
// machines without nvcc, a CMakeLists.txt that finds the installed SDK, and a README) that builds
// out of any tree and runs with `gpuwasm run`.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/status.h"
#include "new_template_cu.h"
#include "new_template_sm_80.h"
#include "new_template_sm_90.h"

namespace gpuwasm::cli {
namespace {

namespace fs = std::filesystem;

struct NewFlags {
  std::string name;
  std::string dir;  // "" = ./NAME
};

// The SDK next to this binary when installed (<prefix>/bin/gpuwasm, <prefix>/share/gpuwasm/sdk),
// else the one of the source tree it was built from; "" when neither is there.
std::string SdkDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "gpuwasm" / "sdk";
    if (fs::exists(installed / "cmake" / "wasm32-wasi.cmake", ec)) return installed.string();
  }
  const fs::path source = GPUWASM_SOURCE_SDK_DIR;
  if (fs::exists(source / "cmake" / "wasm32-wasi.cmake", ec)) return source.string();
  return "";
}

std::string Guest(const std::string& name) {
  return "/* " + name + R"(: a gpuwasm guest (made by `gpuwasm new`). It adds two vectors on the device
 * with kernels/vector_add.cu and checks every element. */
#include <stdio.h>

#include "vector_add_ptx.h" /* kernels/vector_add.cu's PTX, embedded by gpuwasm_embed_ptx */
#include "wasi_cuda.h"

#define N 4096
static float a[N], b[N], c[N];

/* Says which call failed and why (the host's reason), and returns a non-zero exit status. */
static int fail(const char* what, int32_t code) {
  char why[512];
  fprintf(stderr, "%s failed (%d): %s\n", what, (int)code, wcu_error_text(why, sizeof why));
  return 1;
}

int main(void) {
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)i;
  }
  int32_t module = wcu_module_load(vector_add_ptx, (int32_t)vector_add_ptx_len);
  if (module < 0) return fail("wcu_module_load", module);
  int32_t kernel = wcu_function(module, "vector_add");
  if (kernel < 0) return fail("wcu_function", kernel);
  int32_t da = wcu_mem_alloc(sizeof a), db = wcu_mem_alloc(sizeof b), dc = wcu_mem_alloc(sizeof c);
  if (da < 0 || db < 0 || dc < 0) return fail("wcu_mem_alloc", da < 0 ? da : db < 0 ? db : dc);
  int32_t r = wcu_memcpy_htod(da, 0, a, sizeof a);
  if (r == 0) r = wcu_memcpy_htod(db, 0, b, sizeof b);
  if (r != 0) return fail("wcu_memcpy_htod", r);
  wcu_arg args[] = {wcu_arg_buffer(da, 0), wcu_arg_buffer(db, 0), wcu_arg_buffer(dc, 0), wcu_arg_u32(N)};
  r = wcu_launch(kernel, N / 256, 1, 1, 256, 1, 1, 0, args, 4);
  if (r != 0) return fail("wcu_launch", r);
  r = wcu_memcpy_dtoh(c, dc, 0, sizeof c); /* waits for the launch */
  if (r != 0) return fail("wcu_memcpy_dtoh", r);
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += c[i] != a[i] + b[i];
  printf(")" +
         name + R"(: %d elements, %d wrong %s\n", N, wrong, wrong ? "FAILED" : "OK");
  return wrong != 0;
}
)";
}

std::string Lists(const std::string& name) {
  return "# " + name + R"(: a gpuwasm guest project (made by `gpuwasm new`). Configure it with the SDK's
# toolchain file, which also lets find_package(GpuwasmSdk) find the SDK:
#   cmake -S . -B build -DCMAKE_TOOLCHAIN_FILE=<sdk>/cmake/wasm32-wasi.cmake
cmake_minimum_required(VERSION 3.25)
project()" +
         name + R"( C)
find_package(GpuwasmSdk REQUIRED)

# The kernel: nvcc makes its PTX when the CUDA toolkit is installed; without it, the PTX files next
# to the .cu are used (refresh them with nvcc -ptx -arch=sm_80 / sm_90 when the kernel changes).
gpuwasm_add_ptx(ptx CU kernels/vector_add.cu ARCHS sm_80)
gpuwasm_embed_ptx(header PTX "${ptx}" NAME vector_add_ptx)

add_executable()" +
         name + " " + name + R"(.c "${header}")
target_include_directories()" +
         name + R"( PRIVATE "${CMAKE_CURRENT_BINARY_DIR}/embed")
)";
}

std::string Readme(const std::string& name, const std::string& sdk) {
  return "# " + name + R"(

A gpuwasm guest: `)" +
         name + R"(.c` runs the kernel in `kernels/vector_add.cu` through `wasi_cuda`
(the guest guide of gpuwasm says everything a guest can do).

Build and run (on the CPU device when there is no GPU):

```sh
cmake -S . -B build -DCMAKE_TOOLCHAIN_FILE=)" +
         sdk + R"(/cmake/wasm32-wasi.cmake
cmake --build build
gpuwasm run build/)" +
         name + R"(.wasm
```

Deploy it to a gpuwasm server: `gpuwasm deploy build/)" +
         name + R"(.wasm --name )" + name + R"(`, then
`gpuwasm invoke )" +
         name + R"(`.
)";
}

Status Write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) return Status::Unavailable("cannot write " + path.string());
  return Status::Ok();
}

int New(const NewFlags& f) {
  auto fail = [](const std::string& why, int code) { return Fail("new", why, code); };
  bool identifier =
      !f.name.empty() && f.name.size() <= 64 && (std::isalpha(static_cast<unsigned char>(f.name[0])) != 0);
  for (char ch : f.name) identifier = identifier && (std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_');
  if (!identifier) {
    return fail("'" + f.name + "' is not a project name: letters, digits and _, starting with a letter, at most 64",
                kExitUsage);
  }
  const fs::path dir = f.dir.empty() ? fs::path(f.name) : fs::path(f.dir);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) return fail(dir.string() + " exists and is not empty", kExitUsage);
  fs::create_directories(dir / "kernels", ec);
  if (ec) return fail("cannot create " + (dir / "kernels").string() + ": " + ec.message(), kExitUsage);
  const std::string sdk = SdkDir();
  const std::string shown_sdk = sdk.empty() ? "<the gpuwasm SDK>" : sdk;
  const std::pair<fs::path, std::string> files[] = {
      {dir / "CMakeLists.txt", Lists(f.name)},
      {dir / (f.name + ".c"), Guest(f.name)},
      {dir / "README.md", Readme(f.name, shown_sdk)},
      {dir / "kernels" / "vector_add.cu",
       std::string(reinterpret_cast<const char*>(new_template_cu), new_template_cu_len)},
      {dir / "kernels" / "vector_add.sm_80.ptx",
       std::string(reinterpret_cast<const char*>(new_template_sm_80), new_template_sm_80_len)},
      {dir / "kernels" / "vector_add.sm_90.ptx",
       std::string(reinterpret_cast<const char*>(new_template_sm_90), new_template_sm_90_len)},
  };
  for (const auto& [path, text] : files) {
    if (Status s = Write(path, text); !s.ok()) return fail(s.message(), kExitUsage);
  }
  if (JsonOutput()) {
    nlohmann::json written = nlohmann::json::array();
    for (const auto& [path, text] : files) written.push_back(path.string());
    PrintJson({{"dir", dir.string()},
               {"files", written},
               {"sdk", sdk.empty() ? nlohmann::json(nullptr) : nlohmann::json(sdk)},
               {"wasm", (dir / "build" / (f.name + ".wasm")).string()}});
    return 0;
  }
  std::printf("made %s: %s.c, kernels/vector_add.cu, CMakeLists.txt, README.md\n", dir.string().c_str(),
              f.name.c_str());
  std::printf(
      "build and run it:\n  cmake -S %s -B %s/build -DCMAKE_TOOLCHAIN_FILE=%s/cmake/wasm32-wasi.cmake\n"
      "  cmake --build %s/build\n  gpuwasm run %s/build/%s.wasm\n",
      dir.string().c_str(), dir.string().c_str(), shown_sdk.c_str(), dir.string().c_str(), dir.string().c_str(),
      f.name.c_str());
  if (sdk.empty())
    std::fprintf(stderr, "gpuwasm new: no SDK found next to this gpuwasm: install it (cmake --install)\n");
  return 0;
}

}  // namespace

void RegisterNew(CLI::App& app) {
  auto flags = std::make_shared<NewFlags>();
  CLI::App* cmd = app.add_subcommand(
      "new",
      "Write a guest project of your own (a C guest, its CUDA kernel and PTX, CMakeLists.txt, README) that builds "
      "with the installed SDK and runs with `gpuwasm run`");
  cmd->add_option("name", flags->name, "Project name (letters, digits, _)")->required();
  cmd->add_option("--dir", flags->dir, "Where to write it (default: ./NAME; must not exist or be empty)");
  cmd->callback([flags] { SetExitCode(New(*flags)); });
}

}  // namespace gpuwasm::cli
