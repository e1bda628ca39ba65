#include "data/directory_walk.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace engine::data {

namespace {

struct DirectoryId {
  dev_t device;
  ino_t inode;
  friend bool operator==(const DirectoryId&, const DirectoryId&) = default;
};

struct CloseDir {
  void operator()(DIR* dir) const { closedir(dir); }
};

enum class EntryKind { file, directory };

// d_type when the file system provides it; stat() (which follows links) otherwise.
EntryKind classify(const std::string& path, unsigned char type) {
  if (type == DT_DIR) return EntryKind::directory;
  if (type != DT_LNK && type != DT_UNKNOWN) return EntryKind::file;
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return EntryKind::directory;
  return EntryKind::file;
}

void walk(const std::string& top, const std::string& relative, std::vector<DirectoryId>& ancestors,
          std::vector<DirectoryListing>& out) {
  const std::string path = top + relative;
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return;
  const DirectoryId id{info.st_dev, info.st_ino};
  for (const DirectoryId& ancestor : ancestors) {
    if (ancestor == id) return;
  }
  std::unique_ptr<DIR, CloseDir> dir(opendir(path.c_str()));
  if (dir == nullptr) return;
  DirectoryListing listing{relative, {}};
  std::vector<std::string> subdirectories;
  while (const dirent* entry = readdir(dir.get())) {
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    if (classify(path + "/" + name, entry->d_type) == EntryKind::directory) {
      subdirectories.emplace_back(name);
    } else {
      listing.files.emplace_back(name);
    }
  }
  dir.reset();
  out.push_back(std::move(listing));
  ancestors.push_back(id);
  for (const std::string& name : subdirectories)
    walk(top, relative + "/" + name, ancestors, out);
  ancestors.pop_back();
}

}  // namespace

std::vector<DirectoryListing> walk_directory(const std::string& top) {
  std::vector<DirectoryListing> listings;
  std::vector<DirectoryId> ancestors;
  walk(top, "", ancestors, listings);
  return listings;
}

std::vector<std::string> list_subdirectories(const std::string& dir, std::string& error) {
  std::vector<std::string> names;
  std::unique_ptr<DIR, CloseDir> handle(opendir(dir.c_str()));
  if (handle == nullptr) {
    error = std::strerror(errno);
    return names;
  }
  while (const dirent* entry = readdir(handle.get())) {
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    if (classify(dir + "/" + name, entry->d_type) == EntryKind::directory) names.emplace_back(name);
  }
  error.clear();
  return names;
}

}  // namespace engine::data
