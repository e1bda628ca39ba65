// GuardedBuffer's allocation, the registry of live buffers, and the guard check.
#include "sim/simt/guarded_buffer.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <utility>

#include "sim/simt/format.h"
#include "sim/simt/sanitizers.h"

namespace simt {
namespace detail {

// [leading guard: kGuardBytes + misalign][data: bytes][trailing guard: kGuardBytes], all in
// one block aligned like the guard size.
struct GuardedAllocation {
  static constexpr std::align_val_t kAlignment{GuardedBuffer::kGuardBytes};

  std::size_t bytes;
  std::size_t lead_bytes;  // kGuardBytes + misalign
  std::string name;
  std::uint16_t canary;
  std::byte* block;

  std::size_t block_bytes() const { return lead_bytes + bytes + GuardedBuffer::kGuardBytes; }
  std::byte* data() const { return block + lead_bytes; }
  bool is_guard(std::size_t at) const { return at < lead_bytes || at >= lead_bytes + bytes; }
  std::byte canary_byte(std::size_t at) const {
    // Little-endian, by absolute position: every 2- and 4-byte aligned element reads the
    // canary word(s), whatever the misalignment.
    return static_cast<std::byte>(at % 2 == 0 ? canary & 0xff : canary >> 8);
  }
  void arm() {
    for (std::size_t at = 0; at < block_bytes(); ++at)
      if (is_guard(at)) block[at] = canary_byte(at);
  }
};

namespace {

// A quiet NaN in bf16 (exponent all ones, quiet bit, payload), so in f32 too as the high half
// of a word. The sign alternates and the payload (1..63, never the canonical NaN's 0 that a
// kernel writing NaN would write) steps between buffers created one after the other, so both
// bytes differ: a value copied from one buffer's guard into the next one's shows entirely.
std::uint16_t next_canary() {
  static std::atomic<unsigned> created{0};
  const unsigned serial = created.fetch_add(1);
  return static_cast<std::uint16_t>((serial % 2 ? 0xffc0u : 0x7fc0u) | (1u + serial % 63u));
}

// Its lock orders nothing for TSan (sanitizers.h): every launch takes it, on the sim device
// from each stream's worker.
struct Registry {
  std::mutex mutex;
  std::set<GuardedAllocation*> live;
};
Registry& registry() {
  static Registry instance;
  return instance;
}

// "<name>: guard bytes [4000, 4003] relative to data() changed (after the 4000 data bytes)".
std::string describe_overwrite(const GuardedAllocation& a, std::size_t first, std::size_t last) {
  const auto from_data = [&](std::size_t at) {
    return static_cast<long long>(at) - static_cast<long long>(a.lead_bytes);
  };
  return format("%s: guard bytes [%lld, %lld] relative to data() changed (%s the %zu data bytes)",
                a.name.c_str(), from_data(first), from_data(last),
                first < a.lead_bytes ? "before" : "after", a.bytes);
}

}  // namespace

std::string guard_violations() {
  Registry& r = registry();
  const UnorderedLockGuard lock(r.mutex);
  std::string report;
  for (GuardedAllocation* a : r.live) {
    // One range per guard, from its first overwritten byte to its last.
    for (const bool leading : {true, false}) {
      const std::size_t begin = leading ? 0 : a->lead_bytes + a->bytes;
      const std::size_t end = leading ? a->lead_bytes : a->block_bytes();
      std::size_t first = end, last = 0;
      for (std::size_t at = begin; at < end; ++at) {
        if (a->block[at] != a->canary_byte(at)) {
          if (first == end) first = at;
          last = at;
        }
      }
      if (first == end) continue;
      if (!report.empty()) report += "; ";
      report += describe_overwrite(*a, first, last);
    }
  }
  if (!report.empty()) {
    for (GuardedAllocation* a : r.live)
      a->arm();
  }
  return report;
}

}  // namespace detail

GuardedBuffer::GuardedBuffer(std::size_t bytes, std::size_t misalign_bytes, std::string name)
    : allocation_(new detail::GuardedAllocation{bytes, kGuardBytes + misalign_bytes,
                                                std::move(name), detail::next_canary(), nullptr}) {
  detail::GuardedAllocation& a = *allocation_;
  a.block = static_cast<std::byte*>(
      ::operator new(a.block_bytes(), detail::GuardedAllocation::kAlignment));
  std::memset(a.data(), 0, bytes);
  a.arm();
  detail::Registry& r = detail::registry();
  const detail::UnorderedLockGuard lock(r.mutex);
  r.live.insert(allocation_.get());
}

GuardedBuffer::~GuardedBuffer() {
  if (!allocation_) return;  // moved from
  {
    detail::Registry& r = detail::registry();
    const detail::UnorderedLockGuard lock(r.mutex);
    r.live.erase(allocation_.get());
  }
  ::operator delete(allocation_->block, detail::GuardedAllocation::kAlignment);
}

GuardedBuffer::GuardedBuffer(GuardedBuffer&&) noexcept = default;

GuardedBuffer& GuardedBuffer::operator=(GuardedBuffer&& other) noexcept {
  GuardedBuffer old(std::move(*this));
  allocation_ = std::move(other.allocation_);
  return *this;
}

std::byte* GuardedBuffer::data() const {
  return allocation_->data();
}
std::size_t GuardedBuffer::size() const {
  return allocation_->bytes;
}
const std::string& GuardedBuffer::name() const {
  return allocation_->name;
}
std::uint16_t GuardedBuffer::canary() const {
  return allocation_->canary;
}

}  // namespace simt
