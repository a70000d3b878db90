// ForwardingDevice: a cuda::Device that passes every call to a simulated device, for tests that
// watch or change one kind of call (count the uploads, refuse a capture) by overriding just it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/device.h"

namespace kiln::testing {

class ForwardingDevice : public cuda::Device {
 public:
  std::string Describe() const override { return sim_->Describe(); }
  int Architecture() const override { return sim_->Architecture(); }
  Result<cuda::DevicePtr> Allocate(int64_t bytes) override { return sim_->Allocate(bytes); }
  void Free(cuda::DevicePtr p) override { sim_->Free(p); }
  Result<cuda::DeviceMemory> Memory() override { return sim_->Memory(); }
  int64_t WorkspaceBytesToCome(bool matmuls, bool convs) override {
    return sim_->WorkspaceBytesToCome(matmuls, convs);
  }
  Status ToDevice(cuda::DevicePtr dst, const void* src, int64_t bytes) override {
    return sim_->ToDevice(dst, src, bytes);
  }
  Status ToHost(void* dst, cuda::DevicePtr src, int64_t bytes) override {
    return sim_->ToHost(dst, src, bytes);
  }
  Status CopyOnDevice(cuda::DevicePtr dst, cuda::DevicePtr src, int64_t bytes) override {
    return sim_->CopyOnDevice(dst, src, bytes);
  }
  Result<void*> AllocatePinned(int64_t bytes) override { return sim_->AllocatePinned(bytes); }
  void FreePinned(void* pinned) override { sim_->FreePinned(pinned); }
  Status ToDeviceAsync(cuda::DevicePtr dst, const void* pinned_src, int64_t bytes) override {
    return sim_->ToDeviceAsync(dst, pinned_src, bytes);
  }
  Status ToHostAsync(void* pinned_dst, cuda::DevicePtr src, int64_t bytes) override {
    return sim_->ToHostAsync(pinned_dst, src, bytes);
  }
  Status BeginCapture() override { return sim_->BeginCapture(); }
  Result<std::unique_ptr<cuda::DeviceGraph>> EndCapture() override { return sim_->EndCapture(); }
  Status Replay(const cuda::DeviceGraph& graph) override { return sim_->Replay(graph); }
  Result<std::shared_ptr<cuda::DeviceCode>> Load(const CompiledPlan& plan) override {
    return sim_->Load(plan);
  }
  Status Check(const cuda::DeviceCode& code, const KernelLaunch& launch) override {
    return sim_->Check(code, launch);
  }
  Status Launch(const cuda::DeviceCode& code, const KernelLaunch& launch,
                const std::vector<cuda::LaunchOperand>& operands) override {
    return sim_->Launch(code, launch, operands);
  }
  Result<std::shared_ptr<cuda::PreparedMatmul>> PrepareMatmul(
      const cuda::MatmulCall& call, const cuda::MatmulOperands& operands) override {
    return sim_->PrepareMatmul(call, operands);
  }
  Status Matmul(const cuda::PreparedMatmul& matmul) override { return sim_->Matmul(matmul); }
  Result<std::shared_ptr<cuda::PreparedConv>> PrepareConv(
      const cuda::ConvCall& call, const cuda::ConvOperands& operands) override {
    return sim_->PrepareConv(call, operands);
  }
  Status Conv(const cuda::PreparedConv& conv) override { return sim_->Conv(conv); }
  Result<std::shared_ptr<cuda::DeviceCollectives>> OpenCollectives(
      std::shared_ptr<Communicator> ranks) override {
    return sim_->OpenCollectives(std::move(ranks));
  }
  Status Synchronize() override { return sim_->Synchronize(); }
  void ClearMarks() override { sim_->ClearMarks(); }
  Result<int> Mark() override { return sim_->Mark(); }
  Result<double> Milliseconds(int from, int to) override { return sim_->Milliseconds(from, to); }

 private:
  std::unique_ptr<cuda::Device> sim_ = cuda::MakeSimulatedDevice(1);
};

}  // namespace kiln::testing
