#include "opencl_baseline.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#if GPUWASM_BENCH_HAVE_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

namespace gpuwasm::bench {

#if GPUWASM_BENCH_HAVE_OPENCL

namespace {

[[noreturn]] void Die(const char* what, cl_int err) {
  std::fprintf(stderr, "OpenCL baseline: %s failed (error %d)\n", what, err);
  std::exit(1);
}

void Check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) Die(what, err);
}

}  // namespace

struct OpenClBaseline::Handles {
  cl_device_id root = nullptr, device = nullptr;
  bool sub_device = false;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  std::map<std::string, cl_kernel> kernels;
  std::vector<cl_mem> buffers;
};

OpenClBaseline::OpenClBaseline() : h_(std::make_unique<Handles>()) {}

OpenClBaseline::~OpenClBaseline() {
  for (auto& [name, k] : h_->kernels) clReleaseKernel(k);
  for (cl_mem m : h_->buffers) clReleaseMemObject(m);
  if (h_->program != nullptr) clReleaseProgram(h_->program);
  if (h_->queue != nullptr) clReleaseCommandQueue(h_->queue);
  if (h_->context != nullptr) clReleaseContext(h_->context);
  if (h_->sub_device) clReleaseDevice(h_->device);
}

std::unique_ptr<OpenClBaseline> OpenClBaseline::Open(unsigned compute_units, const std::string& source,
                                                     std::string* why) {
  cl_uint platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) {
    *why = "no OpenCL platform (install pocl-opencl-icd)";
    return nullptr;
  }
  std::vector<cl_platform_id> ids(platforms);
  Check(clGetPlatformIDs(platforms, ids.data(), nullptr), "clGetPlatformIDs");
  std::unique_ptr<OpenClBaseline> b(new OpenClBaseline());
  for (cl_platform_id p : ids) {
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_CPU, 1, &b->h_->root, nullptr) == CL_SUCCESS) break;
  }
  if (b->h_->root == nullptr) {
    *why = "no OpenCL CPU device (install pocl-opencl-icd)";
    return nullptr;
  }
  char name[256] = {};
  Check(clGetDeviceInfo(b->h_->root, CL_DEVICE_NAME, sizeof name - 1, name, nullptr), "clGetDeviceInfo");
  cl_uint units = 0;
  Check(clGetDeviceInfo(b->h_->root, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr), "clGetDeviceInfo");
  b->h_->device = b->h_->root;
  if (compute_units < units) {
    const cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY,
                                                  static_cast<cl_device_partition_property>(compute_units), 0};
    cl_uint made = 0;
    std::vector<cl_device_id> subs(units / compute_units);
    if (clCreateSubDevices(b->h_->root, props, static_cast<cl_uint>(subs.size()), subs.data(), &made) != CL_SUCCESS ||
        made == 0) {
      *why = "the OpenCL device cannot be partitioned into " + std::to_string(compute_units) + " compute unit(s)";
      return nullptr;
    }
    b->h_->device = subs[0];
    b->h_->sub_device = true;
    for (cl_uint i = 1; i < made; ++i) clReleaseDevice(subs[i]);
  }
  b->name_ = std::string(name) + " (" + std::to_string(std::min(compute_units, units)) + " of " +
             std::to_string(units) + " compute units)";
  cl_int err = CL_SUCCESS;
  b->h_->context = clCreateContext(nullptr, 1, &b->h_->device, nullptr, nullptr, &err);
  Check(err, "clCreateContext");
  b->h_->queue = clCreateCommandQueue(b->h_->context, b->h_->device, 0, &err);
  Check(err, "clCreateCommandQueue");
  const char* text = source.c_str();
  size_t length = source.size();
  b->h_->program = clCreateProgramWithSource(b->h_->context, 1, &text, &length, &err);
  Check(err, "clCreateProgramWithSource");
  if (clBuildProgram(b->h_->program, 1, &b->h_->device, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(b->h_->program, b->h_->device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(b->h_->program, b->h_->device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    std::fprintf(stderr, "OpenCL baseline: the kernels did not build:\n%s\n", log.c_str());
    std::exit(1);
  }
  return b;
}

OpenClBaseline::Buffer OpenClBaseline::Upload(const void* data, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m =
      clCreateBuffer(h_->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, const_cast<void*>(data), &err);
  Check(err, "clCreateBuffer");
  h_->buffers.push_back(m);
  return {m, bytes};
}

void OpenClBaseline::Download(const Buffer& b, void* data) {
  Check(clEnqueueReadBuffer(h_->queue, static_cast<cl_mem>(b.mem), CL_TRUE, 0, b.bytes, data, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

void OpenClBaseline::Write(const Buffer& b, const void* data) {
  Check(clEnqueueWriteBuffer(h_->queue, static_cast<cl_mem>(b.mem), CL_TRUE, 0, b.bytes, data, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void OpenClBaseline::Free(const Buffer& b) {
  auto m = static_cast<cl_mem>(b.mem);
  std::erase(h_->buffers, m);
  clReleaseMemObject(m);
}

void OpenClBaseline::Run(const char* kernel, const std::vector<size_t>& global, const std::vector<size_t>& local,
                         const std::vector<Arg>& args) {
  cl_kernel& k = h_->kernels[kernel];
  cl_int err = CL_SUCCESS;
  if (k == nullptr) {
    k = clCreateKernel(h_->program, kernel, &err);
    Check(err, "clCreateKernel");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    const auto index = static_cast<cl_uint>(i);
    if (a.handle != nullptr) {
      Check(clSetKernelArg(k, index, sizeof(cl_mem), &a.handle), "clSetKernelArg");
    } else if (a.local_bytes != 0) {
      Check(clSetKernelArg(k, index, a.local_bytes, nullptr), "clSetKernelArg");
    } else {
      Check(clSetKernelArg(k, index, a.value.size(), a.value.data()), "clSetKernelArg");
    }
  }
  Check(clEnqueueNDRangeKernel(h_->queue, k, static_cast<cl_uint>(global.size()), nullptr, global.data(), local.data(),
                               0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  Check(clFinish(h_->queue), "clFinish");
}

#else  // built without OpenCL

struct OpenClBaseline::Handles {};
OpenClBaseline::OpenClBaseline() = default;
OpenClBaseline::~OpenClBaseline() = default;
std::unique_ptr<OpenClBaseline> OpenClBaseline::Open(unsigned, const std::string&, std::string* why) {
  *why = "bench_cpu_device was built without OpenCL (install ocl-icd-opencl-dev and pocl-opencl-icd, then reconfigure)";
  return nullptr;
}
OpenClBaseline::Buffer OpenClBaseline::Upload(const void*, size_t) { return {}; }
void OpenClBaseline::Download(const Buffer&, void*) {}
void OpenClBaseline::Write(const Buffer&, const void*) {}
void OpenClBaseline::Free(const Buffer&) {}
void OpenClBaseline::Run(const char*, const std::vector<size_t>&, const std::vector<size_t>&, const std::vector<Arg>&) {
}

#endif

}  // namespace gpuwasm::bench
