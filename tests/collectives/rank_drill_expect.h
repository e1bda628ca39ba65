// What the failure drill demands of a finished job, rank by rank (used by rank_drill.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rank_drill_records.h"

namespace engine::drill {

// Which peer a survivor's timeout message must name (ring transports; MPI's own collectives
// cannot name one and say so).
enum class SilentPeerRule {
  // Every survivor names the victim: it waited on it directly (the direct exchange of small
  // all-reduces: every rank sends to and receives from every other).
  victim,
  // Following the peers the survivors name leads to the victim: on the ring a survivor waits
  // for its left neighbour, which may be a survivor stuck waiting on the victim.
  chain,
};
SilentPeerRule parse_silent_peer_rule(const std::string& text);

struct DrillSetup {
  std::string impl = "ring-shm";
  std::string mode = "kill";  // or "silent"
  int ranks = 3;
  int victim = 1;
  double timeout_s = 3;  // the communicator's timeout
  int64_t elements = 4 << 20;
  SilentPeerRule silent_peer = SilentPeerRule::chain;
};

// A survivor must have ended this long after the victim left.
inline double deadline_after_victim_s(const DrillSetup& setup) {
  return setup.timeout_s + 10;
}

struct RankOutcome {
  std::optional<ExitRecord> exit;  // none: its wrapper never recorded an end
  std::string log;                 // its stdout and stderr
};

struct DrillOutcome {
  std::optional<VictimRecord> victim;
  std::vector<RankOutcome> ranks;  // indexed by rank
};

// Every way the job fell short, each naming the rank; empty when the drill passed.
std::vector<std::string> check_drill(const DrillSetup& setup, const DrillOutcome& outcome);

// One line per rank: its role, how and when it ended, its timeout message.
std::string describe_outcome(const DrillSetup& setup, const DrillOutcome& outcome);

}  // namespace engine::drill
