// Hand-written kernels the fault tests run as given (faults_test.cc) and instrumented
// (instrument_test.cc): their PTX line numbers are part of the tests' expectations.
#pragma once

namespace gpuwasm::testing {

// One store whose lanes alternate between two buffers (even lanes: a[tid], odd lanes: b[tid]),
// as a kernel selecting its output per thread does. Its stores are on PTX line 20.
inline constexpr const char* kTwoBufferPtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry split(.param .u64 a, .param .u64 b, .param .u32 n)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [a];\n  ld.param.u64 %rd2, [b];\n  ld.param.u32 %r3, [n];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
    "  mov.u32 %r1, %tid.x;\n  and.b32 %r2, %r1, 1;\n  setp.eq.u32 %p1, %r2, 0;\n"
    "  selp.b64 %rd3, %rd1, %rd2, %p1;\n  mul.wide.u32 %rd4, %r1, 4;\n  add.s64 %rd5, %rd3, %rd4;\n"
    "  st.global.u32 [%rd5], %r1;\n  st.global.u32 [%rd5], %r3;\n  ret;\n}\n";

// Thread 5 of every block traps (PTX line 16) after every thread stored its index to p[tid].
inline constexpr const char* kTrapperPtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry trapper(.param .u64 p)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [p];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n"
    "  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r1;\n  setp.eq.u32 %p1, %r1, 5;\n"
    "  @%p1 trap;\n  ret;\n}\n";

// Each thread copies 16 bytes of p into shared memory with cp.async (PTX line 17), then stores
// their first word to q.
inline constexpr const char* kCopierPtx =
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry copier(.param .u64 p, .param .u64 q)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<6>;\n  .shared .align 16 .b8 s[1024];\n  ld.param.u64 %rd1, [p];\n"
    "  ld.param.u64 %rd4, [q];\n  mov.u32 %r1, %tid.x;\n  shl.b32 %r2, %r1, 4;\n  mov.u32 %r3, s;\n"
    "  add.u32 %r3, %r3, %r2;\n  mul.wide.u32 %rd3, %r2, 1;\n  add.s64 %rd2, %rd1, %rd3;\n"
    "  cp.async.cg.shared.global [%r3], [%rd2], 16;\n  cp.async.wait_all;\n  bar.sync 0;\n"
    "  ld.shared.u32 %r1, [%r3];\n  add.s64 %rd5, %rd4, %rd3;\n  st.global.u32 [%rd5], %r1;\n  ret;\n}\n";

}  // namespace gpuwasm::testing
