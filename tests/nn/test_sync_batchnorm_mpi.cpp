// SyncBatchNorm under mpirun with 1-4 ranks (ring-shm): on N ranks it equals BatchNorm2d on
// the concatenated global batch, which every rank rebuilds from (seed, rank) and runs
// locally. Checked per rank: its rows of y and dx, the running statistics, the residual
// gradient, its own weight/bias gradients against the double-precision sums over its rows,
// and their sum over ranks against the global layer's. Equal and unequal batches, a rank with
// a single value per channel, mean 1e3 and 1e4 (std 1) on the first step, the fused ReLU and
// residual, PyTorch's error for a global count of 1, and evaluation, which communicates
// nothing. Each step's collectives are counted: one f64[2C+1] and one f32[2C] all-reduce.
//
// Tolerances (fp32 results, relative to max(|expected|, RMS of the result)): y 1e-5,
// running mean 1e-6 of |mean| + std, running var 1e-5, dx and weight gradients 1e-4 (sums in
// a different order, with cancellation), bias gradients 1e-5; at mean 1e3 / 1e4 y, dx and
// the variances 3e-4 / 3e-3: each rank's fp32 mean rounds by up to an ulp of the mean (1e-3
// std at 1e4), as the global layer's does, and their difference moves everything by that.
// One rank: bit for bit equal to BatchNorm2d. --comm=nccl|ring-nccl runs the SyncBatchNorm cases
// on this rank's GPU over that communicator (the sim device's NCCL shim in its build).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <functional>
#include <string>

#include "counting_communicator.h"
#include "sync_bn_harness.h"
#include "sync_bn_world.h"

namespace engine {
namespace {

using testing::all_close;
using testing::BnBatch;
using testing::BnResult;
using testing::BnStep;
using testing::CountingCommunicator;
using testing::rows_of;

struct Tolerance {
  double y = 1e-5, dx = 1e-4, dweight = 1e-4, dbias = 1e-5, mean = 1e-6, var = 1e-5;
};

Tolerance large_mean_tolerance(double mean) {
  const double t = mean >= 1e4 ? 3e-3 : 3e-4;
  return {t, t, t, 1e-5, 1e-7, t};
}

// The sum over ranks of each rank's values, in double (MPI, not the communicator under test).
std::vector<double> sum_over_ranks(const std::vector<float>& mine) {
  std::vector<double> local(mine.begin(), mine.end()), total(mine.size());
  MPI_Allreduce(local.data(), total.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_SUM,
                testing::session()->comm());
  return total;
}

// This rank's weight and bias gradients as the double-precision sums over its own rows of
// dy * xhat and dy, with xhat from the global batch's double statistics: what PyTorch's
// SyncBatchNorm leaves in .grad before DDP averages it.
struct LocalGrads {
  std::vector<double> dweight, dbias;
};
LocalGrads reference_local_grads(const BnBatch& b, int rank, const std::vector<float>& global_x,
                                 const std::vector<float>& pre_activation_dy) {
  const int64_t c = b.channels;
  const int64_t rows = static_cast<int64_t>(global_x.size()) / c;
  const testing::ReferenceStats stats = testing::reference_stats(global_x, rows, c);
  const std::vector<float> x = rows_of(global_x, b, rank);
  LocalGrads g{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0)};
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = i % static_cast<size_t>(c);
    const double xhat = (x[i] - stats.mean[ch]) / std::sqrt(stats.var[ch] + 1e-5);
    g.dbias[ch] += pre_activation_dy[i];
    g.dweight[ch] += pre_activation_dy[i] * xhat;
  }
  return g;
}

class SyncBatchNorm : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = &testing::sync_bn_communicator();
    rank_ = comm_->rank();
    world_ = comm_->size();
  }

  // Rank r holds batch_of(r) images; the rest of the case from `b`.
  BnBatch batch(BnBatch b, const std::function<int64_t(int)>& batch_of) const {
    b.batches.clear();
    for (int r = 0; r < world_; ++r)
      b.batches.push_back(batch_of(r));
    return b;
  }

  // Runs the step as SyncBN on this rank's rows and as BatchNorm2d on the global batch, and
  // checks every output of this rank against the global one.
  void check_against_global(const BnBatch& b, const BnStep& step, const Tolerance& tol) {
    const std::vector<float> gx = testing::global_values(b, 0), gdy = testing::global_values(b, 1),
                             gres = testing::global_values(b, 2);
    const BnResult global =
        testing::run_bn(b, b.global_batch(), gx, gdy, gres, step, nullptr, stream_);
    CountingCommunicator counting(*comm_);
    const BnResult mine =
        testing::run_bn(b, b.batches[rank_], rows_of(gx, b, rank_), rows_of(gdy, b, rank_),
                        rows_of(gres, b, rank_), step, &counting, stream_);
    const std::string where = "rank " + std::to_string(rank_) + "/" + std::to_string(world_);
    const double mean_scale = std::abs(b.mean) + b.std;
    EXPECT_TRUE(all_close(rows_of(global.y, b, rank_), mine.y, tol.y)) << where << " y";
    EXPECT_TRUE(all_close(global.running_mean, mine.running_mean, tol.mean, mean_scale))
        << where << " running_mean";
    EXPECT_TRUE(all_close(global.running_var, mine.running_var, tol.var))
        << where << " running_var";
    EXPECT_EQ(mine.batches_tracked, 1);
    // The collectives of the step: the forward's fp64 sums, and (training) the backward's; none
    // in a world of one, whose sums are the global ones (nothing queued on the communicator,
    // which a CUDA graph's capture could not hold).
    const int64_t c = b.channels;
    std::vector<CountingCommunicator::Call> expected_calls;
    if (world_ > 1) {
      expected_calls.push_back({CollectiveKind::all_reduce, ReduceOp::sum, DType::f64, 2 * c + 1});
      if (step.training) {
        expected_calls.push_back({CollectiveKind::all_reduce, ReduceOp::sum, DType::f32, 2 * c});
      }
    }
    ASSERT_EQ(counting.calls().size(), expected_calls.size()) << where;
    for (size_t i = 0; i < expected_calls.size(); ++i) {
      EXPECT_EQ(counting.calls()[i].dtype, expected_calls[i].dtype) << where << " call " << i;
      EXPECT_EQ(counting.calls()[i].numel, expected_calls[i].numel) << where << " call " << i;
      EXPECT_EQ(counting.calls()[i].op, ReduceOp::sum) << where << " call " << i;
    }
    if (!step.training) return;

    EXPECT_TRUE(all_close(rows_of(global.dx, b, rank_), mine.dx, tol.dx)) << where << " dx";
    EXPECT_TRUE(all_close(rows_of(global.residual_grad, b, rank_), mine.residual_grad, tol.y))
        << where << " residual_grad";
    // The gradients are this rank's own sums (PyTorch's), which add up to the global ones.
    const LocalGrads local = reference_local_grads(b, rank_, gx, mine.residual_grad);
    EXPECT_TRUE(all_close(local.dbias, mine.dbias, tol.dbias)) << where << " local dbias";
    EXPECT_TRUE(all_close(local.dweight, mine.dweight, tol.dweight)) << where << " local dweight";
    EXPECT_TRUE(all_close(global.dbias, sum_over_ranks(mine.dbias), tol.dbias))
        << where << " sum over ranks of dbias";
    EXPECT_TRUE(all_close(global.dweight, sum_over_ranks(mine.dweight), tol.dweight))
        << where << " sum over ranks of dweight";

    if (world_ == 1) {
      // One rank: the same fp64 path as BatchNorm2d, bit for bit.
      EXPECT_EQ(global.y, mine.y);
      EXPECT_EQ(global.dx, mine.dx);
      EXPECT_EQ(global.running_mean, mine.running_mean);
      EXPECT_EQ(global.running_var, mine.running_var);
      EXPECT_EQ(global.dweight, mine.dweight);
      EXPECT_EQ(global.dbias, mine.dbias);
    }
  }

  Communicator* comm_ = nullptr;
  int rank_ = 0, world_ = 1;
  Stream stream_{testing::sync_bn_device()};
};

TEST_F(SyncBatchNorm, EqualsBatchNormOnTheGlobalBatch) {
  // C = 16 takes the AVX-512 loops where the CPU has them, C = 7 the portable ones.
  for (int64_t channels : {int64_t{7}, int64_t{16}}) {
    SCOPED_TRACE("C " + std::to_string(channels));
    const BnBatch b = batch(
        {.batches = {}, .h = 3, .w = 3, .channels = channels, .mean = 0.5, .std = 2.0, .seed = 3},
        [](int) { return 2; });
    check_against_global(b, {}, {});
  }
}

TEST_F(SyncBatchNorm, UnequalBatchesPerRank) {
  // Rank r holds r + 1 images (one rank 4x as many as another at 4 ranks).
  const BnBatch b =
      batch({.batches = {}, .h = 2, .w = 3, .channels = 5, .mean = -1.0, .std = 1.5, .seed = 5},
            [](int r) { return r + 1; });
  check_against_global(b, {}, {});
}

TEST_F(SyncBatchNorm, ARankWithOneValuePerChannelWorksWhenTheGlobalCountExceedsOne) {
  // Rank 0 holds a single 1x1 image (one value per channel, PyTorch's error for plain BN);
  // the others 3 images. On one rank that is a global count of 1: the next test.
  if (world_ == 1) GTEST_SKIP() << "a world of one has no other rank to add values";
  const BnBatch b =
      batch({.batches = {}, .h = 1, .w = 1, .channels = 6, .mean = 0.2, .std = 1.0, .seed = 7},
            [](int r) { return r == 0 ? 1 : 3; });
  check_against_global(b, {.relu = true}, {});
}

TEST_F(SyncBatchNorm, GlobalCountOfOneIsPyTorchsError) {
  // Every rank holds one value per channel: a global count of world size, which trains (and
  // equals the global layer) from 2 ranks on; on one rank it is PyTorch's error, worded as
  // BatchNorm2d's.
  const BnBatch b =
      batch({.batches = {}, .h = 1, .w = 1, .channels = 4, .mean = 0.0, .std = 1.0, .seed = 9},
            [](int) { return 1; });
  if (world_ > 1) {
    check_against_global(b, {}, {});
    return;
  }
  const std::vector<float> x = testing::rank_values(b, 0, 0), dy = testing::rank_values(b, 0, 1);
  auto error_text = [&](Communicator* comm) {
    try {
      testing::run_bn(b, 1, x, dy, {}, {}, comm, stream_);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  const std::string plain = error_text(nullptr), synced = error_text(comm_);
  const std::string wording =
      "Expected more than 1 value per channel when training, got input size [1, 4, 1, 1] "
      "(N, C, H, W)";
  EXPECT_NE(plain.find("bn (BatchNorm2d): " + wording), std::string::npos) << plain;
  EXPECT_NE(synced.find("bn (SyncBatchNorm): " + wording), std::string::npos) << synced;
  EXPECT_NE(synced.find("1 value(s) per channel over all ranks"), std::string::npos) << synced;
}

TEST_F(SyncBatchNorm, LargeMeansOnTheFirstStep) {
  // Mean 1e3 and 1e4, std 1, running mean 0: the fp64 sums keep the variance that fp32 sums
  // of the same values lose entirely (sumsq ~ 1e10 has an ulp of ~1e3 in fp32).
  for (double mean : {1e3, 1e4}) {
    SCOPED_TRACE("mean " + std::to_string(mean));
    const BnBatch b =
        batch({.batches = {}, .h = 4, .w = 4, .channels = 8, .mean = mean, .std = 1.0, .seed = 11},
              [](int r) { return 2 + r % 2; });
    check_against_global(b, {}, large_mean_tolerance(mean));
  }
}

TEST_F(SyncBatchNorm, FusedReluAndResidual) {
  const BnBatch b =
      batch({.batches = {}, .h = 2, .w = 2, .channels = 12, .mean = 0.3, .std = 1.0, .seed = 13},
            [](int r) { return 1 + (r + 1) % 3; });
  {
    SCOPED_TRACE("relu");
    check_against_global(b, {.relu = true}, {});
  }
  {
    SCOPED_TRACE("residual + relu");
    check_against_global(b, {.relu = true, .residual = true}, {});
  }
  {
    SCOPED_TRACE("residual");
    check_against_global(b, {.residual = true}, {});
  }
}

TEST_F(SyncBatchNorm, EvalUsesRunningStatsAndCommunicatesNothing) {
  // After one (synced) training step every rank holds the global running statistics; an
  // evaluation forward then uses them without any collective (the counter sees only the
  // training step's one all-reduce), and equals the global layer's evaluation on its rows.
  const BnBatch b =
      batch({.batches = {}, .h = 3, .w = 2, .channels = 9, .mean = 2.0, .std = 0.5, .seed = 15},
            [](int r) { return 2 + r; });
  check_against_global(b, {.relu = true, .residual = true, .training = false}, {});
  // Only rank 0 evaluates once more: a collective there would leave the ranks out of step
  // and the next test's collectives would fail or hang.
  if (rank_ == 0) {
    CountingCommunicator counting(*comm_);
    nn::ParameterSet params;
    nn::BatchNorm2d bn(params, "bn", {b.channels, 1e-5f, 0.1f, false});
    params.allocate(stream_.device(), stream_);
    bn.reset_state(stream_);
    bn.set_sync_group(&counting);
    EXPECT_EQ(bn.type(), "SyncBatchNorm");
    bn.setup(b.shape(2), {stream_.device(), DType::f32, stream_, true, true});
    nn::Pass eval{stream_, false, false, {}};
    const Tensor tx = Tensor::from_floats(b.shape(2), testing::rank_values(b, 0, 0))
                          .to(stream_.device(), stream_);
    bn.forward(tx, eval);
    EXPECT_TRUE(counting.calls().empty());
  }
}

}  // namespace
}  // namespace engine
