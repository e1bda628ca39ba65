#include "sim/simt/self_image.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <unordered_set>

#include "sim/simt/format.h"

namespace simt::detail {
namespace {

// The object the __shared__ macro plants next to each static shared variable.
constexpr std::string_view kMarker = "simt_smem_marker_";

bool read_at(std::ifstream& file, std::uint64_t offset, void* out, std::size_t bytes) {
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  return static_cast<bool>(file);
}

// Where the executable is loaded (0 unless it is position-independent): the first object
// dl_iterate_phdr reports is the main program.
std::uintptr_t load_bias() {
  std::uintptr_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        *static_cast<std::uintptr_t*>(out) = info->dlpi_addr;
        return 1;
      },
      &bias);
  return bias;
}

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// "_ZZ<function>E17simt_smem_marker_3" -> "_ZZ<function>E", the prefix of every static local
// of that function; empty when `name` is not a marker.
std::string_view marker_scope(std::string_view name) {
  const std::size_t at = name.find(kMarker);
  if (at == std::string_view::npos || !name.starts_with("_ZZ")) return {};
  std::size_t digits = at;
  while (digits > 0 && is_digit(name[digits - 1]))
    --digits;
  if (digits == at || digits == 0 || name[digits - 1] != 'E') return {};
  return name.substr(0, digits);
}

// Whether `name` is "<scope><length><identifier>..." for one of `scopes`.
bool in_scope(std::string_view name, const std::unordered_set<std::string_view>& scopes) {
  for (std::size_t e = name.find('E'); e != std::string_view::npos; e = name.find('E', e + 1)) {
    if (e + 1 < name.size() && is_digit(name[e + 1]) && scopes.contains(name.substr(0, e + 1))) {
      return true;
    }
  }
  return false;
}

// The calling thread's instance of the executable's TLS block (the first object that
// dl_iterate_phdr reports is the main program), or null when it has none.
std::byte* thread_tls_block() {
  void* block = nullptr;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        *static_cast<void**>(out) = info->dlpi_tls_data;
        return 1;
      },
      &block);
  return static_cast<std::byte*>(block);
}

// Sorts the ranges and merges those that touch or overlap.
std::vector<MemoryRange> merged(std::vector<MemoryRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const MemoryRange& a, const MemoryRange& b) { return a.begin < b.begin; });
  std::vector<MemoryRange> out;
  for (const MemoryRange& r : ranges) {
    if (!out.empty() && r.begin <= out.back().begin + out.back().size) {
      out.back().size =
          std::max(out.back().size, static_cast<std::size_t>(r.begin + r.size - out.back().begin));
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// Whether `name` is the guard variable "_ZGVZ<function>E..." of a static local of one of
// `scopes` (the local itself is "_ZZ<function>E...").
bool is_guard_in_scope(std::string_view name, const std::unordered_set<std::string_view>& scopes) {
  constexpr std::string_view kGuard = "_ZGVZ";
  if (!name.starts_with(kGuard)) return false;
  const std::string local = "_ZZ" + std::string(name.substr(kGuard.size()));
  return in_scope(local, scopes);
}

class SelfImage {
 public:
  static const SelfImage& get() {
    static const SelfImage image;
    return image;
  }

  std::vector<MemoryRange> shared;
  // thread_local __shared__ variables (the TSan build, shared_memory.h): `begin` is the offset
  // into each thread's instance of the executable's TLS block, as the symbol table gives it.
  std::vector<MemoryRange> thread_shared;
  struct Function {
    std::uintptr_t address;
    std::uint32_t name;
  };
  std::vector<Function> functions;  // sorted by address
  std::string strings;
  bool loaded = false;  // the symbol table was read

 private:
  SelfImage() : loaded(load()) {
    if (!loaded) {
      std::fprintf(stderr,
                   "simt: cannot read the symbol table of /proc/self/exe; static __shared__ "
                   "variables are not NaN-filled before each block\n");
    }
  }

  bool load() {
    std::ifstream file("/proc/self/exe", std::ios::binary);
    Elf64_Ehdr header;
    if (!read_at(file, 0, &header, sizeof header) ||
        std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
        header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
      return false;
    }
    std::vector<Elf64_Shdr> sections(header.e_shnum);
    if (!read_at(file, header.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) {
      return false;
    }
    const auto symtab = std::find_if(sections.begin(), sections.end(),
                                     [](const Elf64_Shdr& s) { return s.sh_type == SHT_SYMTAB; });
    if (symtab == sections.end() || symtab->sh_link >= sections.size()) return false;
    std::vector<Elf64_Sym> symbols(symtab->sh_size / sizeof(Elf64_Sym));
    const Elf64_Shdr& names = sections[symtab->sh_link];
    strings.resize(names.sh_size);
    if (!read_at(file, symtab->sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym)) ||
        !read_at(file, names.sh_offset, strings.data(), strings.size()) || strings.empty() ||
        strings.back() != '\0') {
      return false;
    }
    const auto name_of = [&](const Elf64_Sym& s) {
      return s.st_name < strings.size() ? std::string_view(strings.c_str() + s.st_name)
                                        : std::string_view();
    };
    const std::uintptr_t bias = load_bias();

    std::unordered_set<std::string_view> scopes;
    for (const Elf64_Sym& s : symbols) {
      const unsigned type = ELF64_ST_TYPE(s.st_info);
      if (type == STT_FUNC && s.st_shndx != SHN_UNDEF && s.st_value != 0) {
        functions.push_back({s.st_value + bias, s.st_name});
      } else if (type == STT_OBJECT) {
        const std::string_view scope = marker_scope(name_of(s));
        if (!scope.empty()) scopes.insert(scope);
      }
    }
    std::sort(functions.begin(), functions.end(),
              [](const Function& a, const Function& b) { return a.address < b.address; });

    for (const Elf64_Sym& s : symbols) {
      const unsigned type = ELF64_ST_TYPE(s.st_info);
      if ((type != STT_OBJECT && type != STT_TLS) || s.st_size == 0 || s.st_shndx == SHN_UNDEF ||
          s.st_shndx >= sections.size()) {
        continue;
      }
      const auto flags = sections[s.st_shndx].sh_flags;
      const std::string_view name = name_of(s);
      if ((flags & SHF_WRITE) == 0 || name.find(kMarker) != std::string_view::npos) continue;
      if ((flags & SHF_TLS) != 0 && is_guard_in_scope(name, scopes)) {
        // The guard of a thread_local __shared__ variable whose type has a (necessarily empty:
        // CUDA allows no dynamic initialization of __shared__) user-provided constructor, such
        // as __nv_bfloat16's. A plain byte per OS thread, which the first fiber to get there
        // would write and the others read with nothing ordering them; filled (non-zero:
        // "initialized") by the host before the block, it is only ever read.
        thread_shared.push_back({reinterpret_cast<std::byte*>(s.st_value), s.st_size});
        continue;
      }
      if (!name.starts_with("_ZZ") || !in_scope(name, scopes)) continue;
      if ((flags & SHF_TLS) != 0) {
        thread_shared.push_back({reinterpret_cast<std::byte*>(s.st_value), s.st_size});
      } else {
        shared.push_back({reinterpret_cast<std::byte*>(s.st_value + bias), s.st_size});
      }
    }
    shared = merged(std::move(shared));
    thread_shared = merged(std::move(thread_shared));
    return true;
  }
};

}  // namespace

const std::vector<MemoryRange>& static_shared_ranges() {
  // Per thread: the thread_local variables' addresses differ between threads, and are fixed
  // for a thread's life.
  thread_local const std::vector<MemoryRange> ranges = [] {
    const SelfImage& image = SelfImage::get();
    std::vector<MemoryRange> all = image.shared;
    std::byte* tls = image.thread_shared.empty() ? nullptr : thread_tls_block();
    if (tls != nullptr) {
      for (const MemoryRange& r : image.thread_shared)
        all.push_back({tls + reinterpret_cast<std::uintptr_t>(r.begin), r.size});
    }
    return all;
  }();
  return ranges;
}

bool static_shared_ranges_known() {
  return SelfImage::get().loaded;
}

std::string function_name(const void* address) {
  const SelfImage& image = SelfImage::get();
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  const char* mangled = nullptr;
  const auto it = std::lower_bound(
      image.functions.begin(), image.functions.end(), target,
      [](const SelfImage::Function& f, std::uintptr_t a) { return f.address < a; });
  Dl_info info;
  if (it != image.functions.end() && it->address == target) {
    mangled = image.strings.c_str() + it->name;
  } else if (dladdr(address, &info) != 0 && info.dli_sname != nullptr) {
    mangled = info.dli_sname;
  }
  if (mangled == nullptr) return format("%p", address);
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  return name;
}

}  // namespace simt::detail
