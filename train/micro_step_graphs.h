// The training micro-step (forward, loss, backward, and with the optimizer step's last
// micro-batch the optimizer step) replayed as CUDA graphs (--cuda-graph): hundreds of launches
// become one, and the host no longer paces the GPU kernel by kernel.
//
// Each kind of micro-step runs kernel by kernel the first time (lazy set-up happens there), is
// captured the second time and replayed from then on. The kinds differ in what the capture
// bakes in: the first micro-batch of an optimizer step (gradients overwritten) or a later one
// (accumulated), the last one (gradients final) or not, class labels or soft targets, and
// whether the optimizer step follows (`tail`). The graphs read the batch from input buffers of
// their own, filled before each replay, and the optimizer its rate from the device memory its
// stage_step() writes before each replay (nn/optimizer.h); clipping's factor is computed on the
// device, and the figures are read after: nothing that varies is baked in. With more than one rank
// each graph holds the gradients' bucketed all-reduces where backward started them (and SyncBN's),
// so every rank must launch the same graphs in the same order, which the same decisions on every
// rank ensure; each launch is watched against --comm-timeout. The loss scale (1 / --accum-steps) is
// the same for the whole run. The model's set-up for another batch shape reallocates its
// buffers: clear() drops every graph then.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/cuda_graph.h"
#include "kernels/stream.h"
#include "kernels/tensor.h"
#include "nn/cross_entropy.h"
#include "nn/data_parallel.h"
#include "nn/resnet.h"

namespace engine::train {

class MicroStepGraphs {
 public:
  // All three outlive this; `ddp` capturable (DataParallel::capturable).
  MicroStepGraphs(nn::ResNet& model, nn::CrossEntropyLoss& loss, nn::DataParallel& ddp);

  struct Batch {
    const Tensor& images;                // on the device, the model's set-up shape
    const std::vector<int32_t>& labels;  // class indices
    const std::vector<float>& targets;   // soft targets [N * K] (--mixup/--cutmix), or empty
    // The same on the device (data::Batch's, the loader's copies), or undefined: then copied
    // from the host vectors.
    const Tensor& device_labels;
    const Tensor& device_targets;
  };
  struct Outputs {
    const Tensor& logits;
    const Tensor& labels;  // the graphs' copy of the batch's labels, on the device
    const Tensor& loss;    // the mean loss, f32[1]
  };
  // One micro-step of `batch`: gradients overwritten when `first`, else accumulated; `sync`
  // for the optimizer step's last micro-batch; dlogits scaled by `loss_scale`. `tail`, when
  // given (with `sync`), launches what follows backward in the same graph: the optimizer step,
  // staged before this call.
  using Tail = std::function<void(Stream&)>;
  Outputs run(const Batch& batch, bool first, bool sync, float loss_scale, Stream& stream,
              const Tail* tail = nullptr);

  // Drops every graph and input buffer (after the model's buffers were set up again).
  void clear();

 private:
  using Kind = std::tuple<bool, bool, bool, bool>;  // first, sync, soft targets, tail
  struct Entry {
    int runs = 0;
    CudaGraph graph;
  };
  void fill_inputs(const Batch& batch, Stream& stream);

  nn::ResNet& model_;
  nn::CrossEntropyLoss& loss_;
  nn::DataParallel& ddp_;
  std::map<Kind, Entry> graphs_;
  Tensor images_, labels_, targets_;  // what every graph reads
  const Tensor* logits_ = nullptr;    // the model's output buffer, known after the first run
  const Tensor* mean_loss_ = nullptr;
};

}  // namespace engine::train
