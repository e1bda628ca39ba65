#include "kernels/tensor.h"

#include <cstring>

#include "kernels/stream.h"

namespace engine {

int64_t shape_numel(const Shape& shape) {
  int64_t numel = 1;
  for (const int64_t extent : shape)
    numel *= extent;
  return numel;
}

std::string shape_str(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, HostMemory host_memory) {
  for (const int64_t extent : shape) {
    if (extent < 0) fail("Tensor::empty: negative extent in shape " + shape_str(shape));
  }
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.storage_ = allocate_storage(t.nbytes(), device, host_memory);
  t.data_ = t.storage_.get();
  t.defined_ = true;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device, Stream& stream) {
  Tensor t = empty(shape, dtype, device);
  zero_bytes("Tensor::zeros", t.raw_data(), device, t.nbytes(), stream);
  return t;
}

Tensor Tensor::from_floats(const Shape& shape, const std::vector<float>& values, DType dtype) {
  if (!is_float_dtype(dtype) && dtype != DType::f64) {
    fail("Tensor::from_floats: " + std::string(dtype_name(dtype)) +
         " is not a float dtype (f32 or bf16); use Tensor::from_ints for i32");
  }
  if (static_cast<int64_t>(values.size()) != shape_numel(shape)) {
    fail("Tensor::from_floats: " + std::to_string(values.size()) + " values for shape " +
         shape_str(shape));
  }
  if (dtype == DType::f64) return from_doubles(shape, {values.begin(), values.end()});
  Tensor t = empty(shape, dtype);
  dispatch_dtype(dtype, [&]<typename T>() {
    T* out = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i)
      out[i] = from_float<T>(values[i]);
  });
  return t;
}

Tensor Tensor::from_ints(const Shape& shape, const std::vector<int32_t>& values) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape)) {
    fail("Tensor::from_ints: " + std::to_string(values.size()) + " values for shape " +
         shape_str(shape));
  }
  Tensor t = empty(shape, DType::i32);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::from_bytes(const Shape& shape, const std::vector<uint8_t>& values) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape)) {
    fail("Tensor::from_bytes: " + std::to_string(values.size()) + " values for shape " +
         shape_str(shape));
  }
  Tensor t = empty(shape, DType::u8);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::from_doubles(const Shape& shape, const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape)) {
    fail("Tensor::from_doubles: " + std::to_string(values.size()) + " values for shape " +
         shape_str(shape));
  }
  Tensor t = empty(shape, DType::f64);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), t.nbytes());
  return t;
}

int64_t Tensor::size(int64_t axis) const {
  if (axis < 0) axis += dim();
  if (axis < 0 || axis >= dim()) {
    fail("Tensor::size: axis out of range for " + describe());
  }
  return shape_[axis];
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (shape_numel(shape) != numel()) {
    fail("Tensor::reshape: " + describe() + " cannot take shape " + shape_str(shape));
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::view(int64_t offset, const Shape& shape) const {
  if (!defined_) fail("Tensor::view of an undefined tensor");
  for (const int64_t extent : shape) {
    if (extent < 0) fail("Tensor::view: negative extent in shape " + shape_str(shape));
  }
  const int64_t count = shape_numel(shape);
  if (offset < 0 || offset > numel() || count > numel() - offset) {
    fail("Tensor::view: elements [" + std::to_string(offset) + ", " +
         std::to_string(offset + count) + ") as " + shape_str(shape) + " are not within " +
         describe());
  }
  Tensor t = *this;
  t.shape_ = shape;
  t.data_ = static_cast<std::byte*>(data_) + static_cast<size_t>(offset) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::to(Device device, Stream& stream) const {
  if (!defined_) fail("Tensor::to of an undefined tensor");
  Tensor t = empty(shape_, dtype_, device);
  copy_bytes("Tensor::to", t.raw_data(), device, raw_data(), device_, nbytes(), stream);
  return t;
}

Tensor Tensor::clone(Stream& stream) const {
  return to(device_, stream);
}

Tensor Tensor::on_host(Stream& stream) const {
  if (!device_.is_cuda()) return *this;
  Tensor host = to(Device::cpu(), stream);
  stream.synchronize();
  return host;
}

std::vector<float> Tensor::to_floats(Stream& stream) const {
  const Tensor host = on_host(stream);
  std::vector<float> values(static_cast<size_t>(numel()));
  if (dtype_ == DType::i32) {
    const int32_t* in = host.data<int32_t>();
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>(in[i]);
    return values;
  }
  if (dtype_ == DType::u8) {
    const uint8_t* in = host.data<uint8_t>();
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>(in[i]);
    return values;
  }
  if (dtype_ == DType::f64) {
    const double* in = host.data<double>();
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>(in[i]);
    return values;
  }
  dispatch_dtype(dtype_, [&]<typename T>() {
    const T* in = host.data<T>();
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = to_float(in[i]);
  });
  return values;
}

std::vector<int32_t> Tensor::to_ints(Stream& stream) const {
  if (dtype_ != DType::i32) fail("Tensor::to_ints on " + describe() + " (use to_floats)");
  const Tensor host = on_host(stream);
  const int32_t* in = host.data<int32_t>();
  return std::vector<int32_t>(in, in + numel());
}

std::vector<uint8_t> Tensor::to_bytes(Stream& stream) const {
  if (dtype_ != DType::u8) fail("Tensor::to_bytes on " + describe() + " (use to_floats)");
  const Tensor host = on_host(stream);
  const uint8_t* in = host.data<uint8_t>();
  return std::vector<uint8_t>(in, in + numel());
}

std::vector<double> Tensor::to_doubles(Stream& stream) const {
  if (dtype_ != DType::f64) fail("Tensor::to_doubles on " + describe() + " (use to_floats)");
  const Tensor host = on_host(stream);
  const double* in = host.data<double>();
  return std::vector<double>(in, in + numel());
}

std::string Tensor::describe() const {
  if (!defined_) return "undefined tensor";
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " on " + device_.str();
}

void Tensor::check_element_type(DType requested) const {
  if (requested != dtype_) {
    fail("Tensor::data<" + std::string(dtype_name(requested)) + ">() on " + describe());
  }
}

}  // namespace engine
