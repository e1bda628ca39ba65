// The boundary between the emulator's headers, compiled into every test, and its library
// (scheduler, fibers, barriers). Kernels never use this directly: they use the CUDA names that
// simt.h defines on top of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <vector_types.h>

namespace simt::detail {

// One kernel launch with its types erased: `invoke(closure)` runs the kernel body for the CUDA
// thread whose fiber is running.
struct KernelLaunch {
  void (*kernel)() = nullptr;  // only to name the kernel in messages
  void (*invoke)(const void* closure) = nullptr;
  const void* closure = nullptr;
  dim3 grid;
  dim3 block;
  std::size_t dynamic_smem_bytes = 0;
};

// sm_90's per-block limit of dynamic shared memory (with cudaFuncSetAttribute's opt-in).
constexpr std::size_t kMaxDynamicSharedBytes = 227 * 1024;

// Why CUDA would reject the launch configuration (block or grid dimensions, dynamic shared
// memory), or "" when it would accept it. run_launch checks it too; the sim device asks first,
// to fail the launch call itself as CUDA does.
std::string invalid_configuration(const KernelLaunch& launch);

// Runs every block of `launch` and returns when all threads have returned. Throws
// std::invalid_argument for a configuration CUDA would reject, std::runtime_error when a
// thread throws, the block deadlocks or a GuardedBuffer's guard was overwritten,
// std::logic_error when called from inside a kernel.
void run_launch(const KernelLaunch& launch);

// __syncthreads and its reducing variants; returns the reduction (0 for kNone).
enum class BlockReduce : std::uint8_t { kNone, kCount, kAnd, kOr };
int sync_block(BlockReduce reduce, int predicate);

// Warp-collective operations. Each participating lane fills a request on its own stack; the
// last lane to arrive computes every participant's result.
enum class WarpOp : std::uint8_t {
  kSync,
  kShflIdx,
  kShflUp,
  kShflDown,
  kShflXor,
  kBallot,
  kAny,
  kAll,
  kReduceAdd,
  kReduceMinSigned,
  kReduceMaxSigned,
  kReduceMinUnsigned,
  kReduceMaxUnsigned,
  kReduceAnd,
  kReduceOr,
  kReduceXor,
  kMatchAny,
  kMatchAll,
  // Tensor-core instructions (warp_matrix.h): the last lane to arrive computes the whole
  // warp's results, so each costs one warp barrier and runs outside the kernel's code.
  kLdmatrix,       // value: this lane's 16-byte row; result: its four registers
  kLdmatrixTrans,  // the same, .trans
  kMmaBf16,        // m16n8k16; value: this lane's MmaFragments; result: its four of D
  kMmaTf32,        // m16n8k8; the same
  // Several of one instruction in one collective (a warp tile's operand loads or products of
  // one K step): one warp barrier for all of them where one each made the switches between
  // lanes most of an emulated training step. value: this lane's LdmatrixBatch or MmaBatch;
  // results go where it points. `shape` must agree across the lanes.
  kLdmatrixBatch,       // shape: the count of ldmatrix .x4
  kLdmatrixTransBatch,  // the same, .trans
  kMmaBf16Batch,        // shape: (tiles of A) << 8 | tiles of B
  kMmaTf32Batch,        // the same
};

// One lane's operands of mma.sync, in the fragment layouts of warp_matrix.h.
struct MmaFragments {
  std::uint32_t a[4];
  std::uint32_t b[2];
  float c[4];
};

// One lane's part of kLdmatrix(Trans)Batch: `count` 16-byte rows, read by the lane itself (its
// own access, for the sanitizers), and where its count x 4 registers go.
struct LdmatrixBatch {
  const unsigned char* rows;
  std::uint32_t* result;
};

// One lane's part of kMmaBf16Batch / kMmaTf32Batch: d[i][j] = a[i] b[j] + d[i][j] for i < tiles
// of A, j < tiles of B (d: row-major [i][j][4], read and written in place).
struct MmaBatch {
  const std::uint32_t (*a)[4];
  const std::uint32_t (*b)[2];
  float (*d)[4];
};

struct WarpRequest {
  WarpOp op = WarpOp::kSync;
  unsigned mask = 0;
  unsigned shape = 0;  // matrix batches: their count or tile counts
  int lane_arg = 0;    // srcLane, delta or laneMask of a shuffle
  int width = 32;      // shuffle segment width
  unsigned size = 0;   // bytes of `value` in use
  alignas(16) unsigned char value[sizeof(MmaFragments)] = {};
  alignas(16) unsigned char result[16] = {};
};
void sync_warp(WarpRequest& request);
// Whether the batched matrix collectives run as one (SIMT_WARP_TILE_BATCHES unset or "on") or
// as their instructions one by one ("off": one warp barrier each, as before the batches, to
// time the difference or rule the batches out); read once. Throws std::invalid_argument for
// any other value.
bool warp_tile_batches();

unsigned lane_id();
unsigned warp_alive_mask();  // lanes of the caller's warp that exist and have not returned
// 32 pointers per warp through which warp-collective code (WMMA) exchanges operands; a lane
// may write only its own slot, and only other lanes read it after a warp barrier.
void** warp_scratch();
void* dynamic_shared_memory();
void thread_fence();

// cp.async (async_copy.h): `bytes` (4, 8 or 16) into shared memory at dst, the first
// src_bytes of them from src and the rest zeros. The library queues a thread's copies in
// commit groups; the header performs the due ones in the kernel's own (instrumented) code, so
// ThreadSanitizer and AddressSanitizer see their writes and reads.
struct AsyncCopy {
  void* dst;
  const void* src;
  unsigned bytes, src_bytes;
};
void async_copy_issue(const AsyncCopy& copy);  // throws std::logic_error for a bad copy
void async_copy_commit();
// The copies of every committed group of the caller but the newest `keep`, in issue order,
// taken off its queue (valid until the caller's next async_copy_* call).
const std::vector<AsyncCopy>& async_copy_due(unsigned keep);

}  // namespace simt::detail
