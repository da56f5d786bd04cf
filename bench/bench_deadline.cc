// How far past its deadline a CPU-device launch stops, by launch shape, in both tiers (the
// interpreter and native code). Target: every shape stops within 50 ms of its deadline.
//
// Shapes: a grid of 2^31-1 x 65535 x 65535 one-thread CTAs, 20 M one-thread CTAs, a 1920x1080
// image of 16x16 CTAs whose threads loop (a blur's shape), and one CTA that never ends (the
// in-CTA check). Each runs --reps times with a --deadline (default 20 ms) and reports the median
// and the largest overshoot, in the same run for both tiers. The baseline is the deadline itself:
// the figures are ms past it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/cpu/cpu_device.h"

using namespace gpuwasm;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry tiny(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %ctaid.x;
  and.b32 %r2, %r1, 63;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd2, %rd2, %rd3;
  st.global.u32 [%rd2], %r1;
  ret;
}
.visible .entry looping(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
  mov.u32 %r3, %tid.x;
LOOP:
  mad.lo.s32 %r3, %r3, 1664525, 1013904223;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  cvta.to.global.u64 %rd2, %rd1;
  and.b32 %r4, %r3, 63;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd2, %rd2, %rd3;
  st.global.u32 [%rd2], %r3;
  ret;
}
.visible .entry forever(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  mov.u32 %r1, 0;
LOOP:
  add.s32 %r1, %r1, 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra LOOP;
  mov.u32 %r1, 0;
  bra LOOP;
}
)";

struct Shape {
  const char* name;
  const char* kernel;
  device::Dim3 grid, block;
  bool with_n;
};

std::vector<uint8_t> Params(uint64_t out, bool with_n) {
  std::vector<uint8_t> p(with_n ? 12 : 8);
  std::memcpy(p.data(), &out, 8);
  if (with_n) {
    uint32_t n = 2000;
    std::memcpy(p.data() + 8, &n, 4);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  int deadline_ms = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) reps = std::max(1, std::atoi(argv[i] + 7));
    if (std::strncmp(argv[i], "--deadline=", 11) == 0) deadline_ms = std::max(1, std::atoi(argv[i] + 11));
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("bench_deadline [--reps=5] [--deadline=20]: ms past its deadline a launch stops, by shape\n");
      return 0;
    }
  }
  const Shape shapes[] = {
      {"2^31-1 x 65535 x 65535 CTAs of 1 thread", "tiny", {2147483647, 65535, 65535}, {1, 1, 1}, false},
      {"20 M CTAs of 1 thread", "tiny", {20'000'000, 1, 1}, {1, 1, 1}, false},
      {"1920x1080 in 16x16 CTAs, 2000 steps a thread", "looping", {120, 68, 1}, {16, 16, 1}, true},
      {"one CTA of 256 threads that never ends", "forever", {1, 1, 1}, {256, 1, 1}, false},
  };
  struct Tier {
    const char* name;
    std::shared_ptr<device::Device> dev;
  };
  device::cpu::CpuDeviceOptions interp, native;
  interp.native = device::cpu::NativeMode::kOff;
  native.native = device::cpu::NativeMode::kAlways;
  Tier tiers[] = {{"interpreted", device::cpu::CreateCpuDevice(interp)},
                  {"native", device::cpu::CreateCpuDevice(native)}};
  std::printf("deadline %d ms, %d reps; ms past the deadline when the launch returned (median / max)\n", deadline_ms,
              reps);
  std::printf("%-48s %18s %18s\n", "shape", tiers[0].name, tiers[1].name);
  bool within = true;
  for (const Shape& sh : shapes) {
    std::vector<double> over[2];
    for (int r = 0; r < reps; ++r) {
      for (int t = 0; t < 2; ++t) {  // interleaved
        auto ctx = *tiers[t].dev->CreateContext();
        auto mod = ctx->LoadModule(kPtx);
        if (!mod.ok()) {
          std::fprintf(stderr, "load: %s\n", mod.status().ToString().c_str());
          return 1;
        }
        auto k = *(*mod)->GetKernel(sh.kernel);
        auto out = *ctx->Allocate(256);
        auto stream = *ctx->CreateStream();
        device::LaunchConfig c;
        c.grid = {1, 1, 1};
        c.block = {1, 1, 1};
        {
          // Compiled (native tier) before the clock starts; the endless one stops at once.
          device::LaunchOptions warm;
          warm.deadline = Clock::now() + std::chrono::milliseconds(1);
          auto first = *ctx->CreateStream();
          (void)first->Launch(*k, c, Params(out, sh.with_n), std::move(warm));
          (void)first->Synchronize();
        }
        c.grid = sh.grid;
        c.block = sh.block;
        device::LaunchOptions o;
        auto t0 = Clock::now();
        const auto deadline = t0 + std::chrono::milliseconds(deadline_ms);
        o.deadline = deadline;
        Status s = stream->Launch(*k, c, Params(out, sh.with_n), std::move(o));
        if (s.ok()) s = stream->Synchronize();
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - deadline).count();
        if (s.code() != StatusCode::kDeadlineExceeded) {
          std::fprintf(stderr, "%s (%s): expected deadline_exceeded, got %s\n", sh.name, tiers[t].name,
                       s.ToString().c_str());
          return 1;
        }
        over[t].push_back(ms);
      }
    }
    std::printf("%-48s", sh.name);
    for (auto& v : over) {
      std::sort(v.begin(), v.end());
      std::printf(" %8.1f / %7.1f", v[v.size() / 2], v.back());
      within = within && v.back() <= 50;
    }
    std::printf("\n");
  }
  std::printf("target: every launch within 50 ms of its deadline: %s\n", within ? "met" : "NOT met");
  return 0;
}
