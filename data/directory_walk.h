// A directory tree listed the way Python's os.walk(top, followlinks=True) sees it: symbolic
// links to directories are entered, everything that is not a directory counts as a file
// (including broken links). Entries are classified from readdir's d_type, so a regular file
// costs no system call of its own; only links and file systems without d_type need a stat().
#pragma once

#include <string>
#include <vector>

namespace engine::data {

struct DirectoryListing {
  std::string relative_dir;        // "" for the top, "/sub", "/sub/deeper", ...
  std::vector<std::string> files;  // names, in readdir order
};

// Every directory under `top` (itself included), in no particular order. A link back to a
// directory being walked is not followed again (os.walk would recurse until the path is too
// long). Unreadable subdirectories are skipped silently, as os.walk does; an unreadable `top`
// gives no listing.
std::vector<DirectoryListing> walk_directory(const std::string& top);

// The subdirectory names of `dir` (links to directories included) and whether it could be
// read at all (errno-style message in `error` otherwise).
std::vector<std::string> list_subdirectories(const std::string& dir, std::string& error);

}  // namespace engine::data
