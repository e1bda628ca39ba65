// A Tensor: dtype, device, shape and contiguous storage shared by reference count. Copying
// a Tensor shares its storage (like torch.Tensor); clone() copies the data.
//
// Activations are NHWC (channels last) and convolution filters KRSC (out, kh, kw, in)
// throughout the engine; shapes are listed in that order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/dtype.h"
#include "kernels/error.h"
#include "kernels/memory.h"

namespace engine {

class Stream;

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3, 4]"

class Tensor {
 public:
  // An undefined tensor (no storage); defined() is false.
  Tensor() = default;

  // Uninitialized storage.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu(),
                      HostMemory host_memory = HostMemory::pageable);
  // Zeros of any dtype (all-zero bytes: memset on the CPU, cudaMemsetAsync queued on `stream`
  // for a CUDA device, whose stream it must be).
  static Tensor zeros(const Shape& shape, DType dtype, Device device, Stream& stream);
  // A CPU tensor holding `values` converted to a float dtype (bf16: round to nearest even) or
  // to f64 (exact).
  static Tensor from_floats(const Shape& shape, const std::vector<float>& values,
                            DType dtype = DType::f32);
  // A CPU i32 tensor holding `values` (class labels, indices).
  static Tensor from_ints(const Shape& shape, const std::vector<int32_t>& values);
  // A CPU u8 tensor holding `values` (codes: the max-pool argmax's window positions).
  static Tensor from_bytes(const Shape& shape, const std::vector<uint8_t>& values);
  // A CPU f64 tensor holding `values` exactly.
  static Tensor from_doubles(const Shape& shape, const std::vector<double>& values);

  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t axis) const;
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  // Typed access; throws engine::Error when T does not match the dtype.
  template <typename T>
  T* data() {
    check_element_type(dtype_of<T>());
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    check_element_type(dtype_of<T>());
    return static_cast<const T*>(data_);
  }

  // Same storage, new shape with the same number of elements.
  Tensor reshape(const Shape& shape) const;
  // Same storage: the contiguous elements [offset, offset + numel(shape)) of this tensor,
  // taken as `shape`. The flat parameter and gradient buffers hand out their views so.
  // Throws engine::Error when the range leaves this tensor.
  Tensor view(int64_t offset, const Shape& shape) const;
  // A copy on `device` (same dtype), ordered on `stream`.
  Tensor to(Device device, Stream& stream) const;
  // A copy on the same device.
  Tensor clone(Stream& stream) const;
  // The values as floats on the host (i32: converted, exact below 2^24; u8: exact; f64:
  // rounded to nearest); waits for `stream`.
  std::vector<float> to_floats(Stream& stream) const;
  // The values of an i32 tensor on the host; waits for `stream`. Throws for float dtypes.
  std::vector<int32_t> to_ints(Stream& stream) const;
  // The values of a u8 tensor on the host; waits for `stream`. Throws for other dtypes.
  std::vector<uint8_t> to_bytes(Stream& stream) const;
  // The values of an f64 tensor on the host, exactly; waits for `stream`. Throws for others.
  std::vector<double> to_doubles(Stream& stream) const;

  // "bf16[8, 56, 56, 64] on cuda:0"
  std::string describe() const;

 private:
  void check_element_type(DType requested) const;
  // This tensor, or its copy on the host when it lives on a CUDA device (waits for stream).
  Tensor on_host(Stream& stream) const;

  std::shared_ptr<std::byte> storage_;
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_ = Device::cpu();
  bool defined_ = false;
};

}  // namespace engine
