#include "kernels/simt/self_image.h"

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

#include "kernels/simt/format.h"

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

class SelfImage {
 public:
  static const SelfImage& get() {
    static const SelfImage image;
    return image;
  }

  std::vector<MemoryRange> shared;
  struct Function {
    std::uintptr_t address;
    std::uint32_t name;
  };
  std::vector<Function> functions;  // sorted by address
  std::string strings;

 private:
  SelfImage() {
    if (!load()) {
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
      if (ELF64_ST_TYPE(s.st_info) != STT_OBJECT || s.st_size == 0 || s.st_shndx == SHN_UNDEF ||
          s.st_shndx >= sections.size()) {
        continue;
      }
      const auto flags = sections[s.st_shndx].sh_flags;
      const std::string_view name = name_of(s);
      if ((flags & SHF_WRITE) == 0 || (flags & SHF_TLS) != 0 || !name.starts_with("_ZZ") ||
          name.find(kMarker) != std::string_view::npos || !in_scope(name, scopes)) {
        continue;
      }
      shared.push_back({reinterpret_cast<std::byte*>(s.st_value + bias), s.st_size});
    }
    std::sort(shared.begin(), shared.end(),
              [](const MemoryRange& a, const MemoryRange& b) { return a.begin < b.begin; });
    std::vector<MemoryRange> merged;
    for (const MemoryRange& r : shared) {
      if (!merged.empty() && r.begin <= merged.back().begin + merged.back().size) {
        merged.back().size = std::max(
            merged.back().size, static_cast<std::size_t>(r.begin + r.size - merged.back().begin));
      } else {
        merged.push_back(r);
      }
    }
    shared = std::move(merged);
    return true;
  }
};

}  // namespace

const std::vector<MemoryRange>& static_shared_ranges() {
  return SelfImage::get().shared;
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
