// The library's half of cp.async (async_copy.h): each thread's queue of copies in commit
// groups, and the checks PTX makes of a copy (sizes, alignment, a shared destination).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/simt/format.h"
#include "sim/simt/runtime.h"
#include "sim/simt/scheduler.h"
#include "sim/simt/self_image.h"

namespace simt::detail {
namespace {

bool inside(const void* p, std::size_t bytes, const void* begin, std::size_t size) {
  const auto* at = static_cast<const std::byte*>(p);
  const auto* first = static_cast<const std::byte*>(begin);
  return begin != nullptr && at >= first && bytes <= size &&
         static_cast<std::size_t>(at - first) <= size - bytes;
}

}  // namespace

bool Scheduler::in_shared_memory(const void* p, std::size_t bytes) const {
  if (launch_ != nullptr && inside(p, bytes, dynamic_smem_, launch_->dynamic_smem_bytes)) {
    return true;
  }
  // A stripped executable hides its static __shared__ variables: nothing to check against.
  if (!static_shared_ranges_known()) return true;
  const std::vector<MemoryRange>& ranges = static_shared_ranges();
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const MemoryRange& r) { return inside(p, bytes, r.begin, r.size); });
}

void async_copy_issue(const AsyncCopy& copy) {
  if (copy.bytes != 4 && copy.bytes != 8 && copy.bytes != 16) {
    throw std::logic_error(
        format("cp.async: a copy of %u bytes (PTX allows 4, 8 or 16)", copy.bytes));
  }
  if (copy.src_bytes > copy.bytes) {
    throw std::logic_error(
        format("cp.async: src-size %u exceeds the copy's %u bytes", copy.src_bytes, copy.bytes));
  }
  const auto misaligned = [&](const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % copy.bytes != 0;
  };
  if (misaligned(copy.dst) || misaligned(copy.src)) {
    throw std::logic_error(format("cp.async: %s address %p is not aligned to the copy's %u bytes",
                                  misaligned(copy.dst) ? "the shared" : "the global",
                                  misaligned(copy.dst) ? copy.dst : copy.src, copy.bytes));
  }
  Scheduler& s = Scheduler::instance();
  if (!s.in_shared_memory(copy.dst, copy.bytes)) {
    throw std::logic_error(
        format("cp.async: the destination %p is not in the block's shared memory", copy.dst));
  }
  s.self().async_copies.copies.push_back(copy);
}

void async_copy_commit() {
  AsyncCopyQueue& queue = Scheduler::instance().self().async_copies;
  queue.group_ends.push_back(queue.copies.size());
}

const std::vector<AsyncCopy>& async_copy_due(unsigned keep) {
  AsyncCopyQueue& queue = Scheduler::instance().self().async_copies;
  queue.due.clear();
  const std::size_t groups = queue.group_ends.size();
  if (groups <= keep) return queue.due;
  const std::size_t done = groups - keep;
  const std::size_t copies = queue.group_ends[done - 1];
  queue.due.assign(queue.copies.begin(),
                   queue.copies.begin() + static_cast<std::ptrdiff_t>(copies));
  queue.copies.erase(queue.copies.begin(),
                     queue.copies.begin() + static_cast<std::ptrdiff_t>(copies));
  queue.group_ends.erase(queue.group_ends.begin(),
                         queue.group_ends.begin() + static_cast<std::ptrdiff_t>(done));
  for (std::size_t& end : queue.group_ends)
    end -= copies;
  return queue.due;
}

void require_no_pending_async_copies(const Thread& thread) {
  const std::size_t pending = thread.async_copies.copies.size();
  if (pending == 0) return;
  throw std::logic_error(
      format("returned with %zu cp.async cop%s never waited for (cp.async.wait_group / wait_all): "
             "their data may land after the thread is gone",
             pending, pending == 1 ? "y" : "ies"));
}

}  // namespace simt::detail
