// What the failure drill's processes leave in its report directory for the check
// (rank_drill.cpp) to read after the job: small "key value" text files.
//   victim         written by the victim (rank_kill.cpp) the moment it dies or goes silent
//   rank-<R>.exit  written by the rank's wrapper (rank_drill_wrapper.cpp) once the rank ended
//   rank-<R>.log   the rank's stdout and stderr
// Times are CLOCK_MONOTONIC nanoseconds: one clock for every process on the host, so the
// victim's moment and a survivor's end can be subtracted.
#pragma once

#include <time.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>

namespace engine::drill {

inline int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

inline std::string victim_record_path(const std::string& dir) {
  return dir + "/victim";
}
inline std::string exit_record_path(const std::string& dir, int rank) {
  return dir + "/rank-" + std::to_string(rank) + ".exit";
}
inline std::string rank_log_path(const std::string& dir, int rank) {
  return dir + "/rank-" + std::to_string(rank) + ".log";
}

struct VictimRecord {
  int rank = -1;
  int64_t pid = 0;
  int64_t left_at_ns = 0;  // when it raised SIGKILL, or stopped calling collectives
};

struct ExitRecord {
  int64_t pid = 0;          // of the rank's own process (the wrapper's child)
  int wait_status = 0;      // as waitpid() returned it
  int64_t ended_at_ns = 0;  // when waitpid() returned
};

using Fields = std::map<std::string, int64_t>;

inline bool write_fields(const std::string& path, const Fields& fields) {
  std::ofstream out(path);
  for (const auto& [key, value] : fields)
    out << key << ' ' << value << '\n';
  return static_cast<bool>(out.flush());
}

// The fields, or nothing when the file is missing or a key is absent.
inline std::optional<Fields> read_fields(const std::string& path,
                                         std::initializer_list<const char*> required) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  Fields fields;
  std::string key;
  int64_t value = 0;
  while (in >> key >> value)
    fields[key] = value;
  for (const char* key : required) {
    if (!fields.count(key)) return std::nullopt;
  }
  return fields;
}

inline bool write_victim_record(const std::string& dir, const VictimRecord& record) {
  return write_fields(
      victim_record_path(dir),
      {{"rank", record.rank}, {"pid", record.pid}, {"left_at_ns", record.left_at_ns}});
}

inline std::optional<VictimRecord> read_victim_record(const std::string& dir) {
  const auto fields = read_fields(victim_record_path(dir), {"rank", "pid", "left_at_ns"});
  if (!fields) return std::nullopt;
  return VictimRecord{static_cast<int>(fields->at("rank")), fields->at("pid"),
                      fields->at("left_at_ns")};
}

inline bool write_exit_record(const std::string& dir, int rank, const ExitRecord& record) {
  return write_fields(exit_record_path(dir, rank), {{"pid", record.pid},
                                                    {"wait_status", record.wait_status},
                                                    {"ended_at_ns", record.ended_at_ns}});
}

inline std::optional<ExitRecord> read_exit_record(const std::string& dir, int rank) {
  const auto fields =
      read_fields(exit_record_path(dir, rank), {"pid", "wait_status", "ended_at_ns"});
  if (!fields) return std::nullopt;
  return ExitRecord{fields->at("pid"), static_cast<int>(fields->at("wait_status")),
                    fields->at("ended_at_ns")};
}

}  // namespace engine::drill
