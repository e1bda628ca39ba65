#include "rank_drill_expect.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace engine::drill {
namespace {

// A message as the library words it, for people and for matching: <name> stands for a
// number, <seconds> for one with one decimal, {name:a|b} for one of the words a or b;
// everything else is literal.
struct Wording {
  std::string shown;
  std::regex pattern;
  std::vector<std::string> names;  // of the placeholders, in order
  bool before_deadline = false;    // a failure the library reported, not a timeout
};

Wording compile(const std::string& shown) {
  Wording wording{shown, {}, {}};
  std::string regex;
  for (size_t i = 0; i < shown.size(); ++i) {
    const char c = shown[i];
    if (c == '<' || c == '{') {
      const size_t end = shown.find(c == '<' ? '>' : '}', i);
      const std::string inside = shown.substr(i + 1, end - i - 1);
      if (c == '<') {
        wording.names.push_back(inside);
        regex += inside == "seconds" ? R"((\d+\.\d))" : R"((\d+))";
      } else {
        const size_t colon = inside.find(':');
        wording.names.push_back(inside.substr(0, colon));
        regex.append("(").append(inside, colon + 1).append(")");
      }
      i = end;
    } else {
      if (std::strchr(R"(\^$.|?*+()[]{})", c) != nullptr) regex += '\\';
      regex += c;
    }
  }
  wording.pattern = std::regex(regex);
  return wording;
}

// collectives/core/timeout.cpp (timeout_message, failure_message, abort_job) and watchdog.cpp,
// per communicator: the forms a survivor's message may take (none: an unknown --impl).
std::vector<Wording> wording_for(const DrillSetup& setup) {
  const std::string head = "[rank <prefix>] all_reduce #<sequence> (" + setup.impl + ", " +
                           std::to_string(setup.elements * 4) +
                           " bytes) timed out after <seconds> s: rank <waiter> waited for ";
  const std::string tail = "; aborting the job";
  if (setup.impl == "ring-shm") {
    return {compile(head + "{what:data from|a free slot at} rank <peer>, which never answered; " +
                    "its process <pid> {state:has exited|is alive}" + tail)};
  }
  if (setup.impl == "ring-mpi") {
    return {compile(head + "{what:data from|an earlier message to be taken by} rank <peer>, " +
                    "which never answered" + tail)};
  }
  // MPI's own collectives, and NCCL's work queued on a stream (the NCCL communicator's, or our
  // ring's over NcclTransport), cannot tell which peer is missing: the watchdog says so.
  if (setup.impl == "mpi" || setup.impl == "nccl" || setup.impl == "ring-nccl") {
    std::vector<Wording> forms = {compile(
        head + "the other ranks (the library does not say which rank never answered)" + tail)};
    // But NCCL reports a peer whose process is gone (ncclCommGetAsyncError; the sim device's
    // words), which the watchdog polls: then the job ends before the deadline.
    if (setup.impl != "mpi" && setup.mode == "kill") {
      Wording failed = compile(
          "[rank <prefix>] all_reduce #<sequence> (" + setup.impl + ", " +
          std::to_string(setup.elements * 4) +
          " bytes) failed after <seconds> s: NCCL reports remote process exited or there was a "
          "network error: {call:nccl[A-Za-z]+} on rank <waiter> of <ranks>: peer rank <peer> "
          "(process <pid>) {state:has exited}; waiting until ncclCommAbort" +
          tail);
      failed.before_deadline = true;
      forms.push_back(std::move(failed));
    }
    return forms;
  }
  return {};
}

bool names(const Wording& wording, const std::string& name) {
  return std::find(wording.names.begin(), wording.names.end(), name) != wording.names.end();
}

struct TimeoutLine {
  int prefix_rank = -1, waiting_rank = -1;
  std::string waited_s;  // as printed
  int peer = -1;         // -1: the message names none (MPI's own collectives)
  bool names_peer = false;
  bool reported = false;  // a failure the library reported, before the timeout
  int64_t peer_pid = 0;   // ring-shm's note on the peer's process
  std::string peer_state;
};

// The lines that end a job: a timeout, or a failure the library reported.
std::vector<std::string> timeout_lines(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("timed out after") != std::string::npos ||
        line.find(" failed after ") != std::string::npos) {
      lines.push_back(line);
    }
  }
  return lines;
}

std::string status_text(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "wait status " + std::to_string(status);
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", s);
  return text;
}

// How soon after a peer dies a survivor must end where the library reports the death.
constexpr double kReportedWithinS = 10.0;

std::string rank_name(int rank) {
  return "rank " + std::to_string(rank);
}

// Whether the library reports the victim's death (then survivors must end sooner).
bool reported_death(const DrillSetup& setup) {
  const std::vector<Wording> wordings = wording_for(setup);
  return std::any_of(wordings.begin(), wordings.end(),
                     [](const Wording& w) { return w.before_deadline; });
}

class Checker {
 public:
  Checker(const DrillSetup& setup, const DrillOutcome& outcome)
      : setup_(setup), outcome_(outcome) {}

  std::vector<std::string> run() {
    const std::vector<Wording> wordings = wording_for(setup_);
    if (wordings.empty()) {
      fail("no known timeout wording for --impl " + setup_.impl);
      return failures_;
    }
    if (!outcome_.victim) {
      fail(rank_name(setup_.victim) +
           " (the victim) never recorded leaving: the drill did not reach its failure");
    } else if (outcome_.victim->rank != setup_.victim) {
      fail("the victim record is " + rank_name(outcome_.victim->rank) + "'s, not " +
           rank_name(setup_.victim) + "'s");
    }
    check_victim_end();
    // Where the library reports a dead peer (NCCL), the first survivor to hear of it ends the
    // job long before the timeout: a survivor the abort ends first prints nothing, but every
    // survivor must end within kReportedWithinS of the victim, and one must have reported it.
    const bool reported_expected = reported_death(setup_);
    std::map<int, TimeoutLine> messages;  // the survivors whose message names a peer
    int reporters = 0;
    for (int rank = 0; rank < setup_.ranks; ++rank) {
      if (rank == setup_.victim) continue;
      check_survivor_end(rank);
      if (reported_expected) {
        const auto after = after_victim_s(rank);
        if (after && *after > kReportedWithinS) {
          fail(rank_name(rank) + " ended " + seconds(*after) + " after " +
               rank_name(setup_.victim) + " died; NCCL reports a dead peer, so the limit is " +
               seconds(kReportedWithinS));
        }
        if (timeout_lines(outcome_.ranks[rank].log).empty()) continue;
      }
      if (auto line = survivor_message(rank, wordings); line && line->names_peer) {
        messages[rank] = *line;
        reporters += line->reported ? 1 : 0;
      }
    }
    if (reported_expected && reporters == 0) {
      fail("no survivor reported the failure NCCL reports when a peer's process is gone");
    }
    check_named_peers(messages);
    return failures_;
  }

 private:
  void fail(std::string failure) { failures_.push_back(std::move(failure)); }

  // Seconds from the victim leaving to `rank`'s end; nothing when either is unknown.
  std::optional<double> after_victim_s(int rank) const {
    const auto& exit = outcome_.ranks[rank].exit;
    if (!exit || !outcome_.victim) return std::nullopt;
    return (exit->ended_at_ns - outcome_.victim->left_at_ns) / 1e9;
  }

  void check_victim_end() {
    const auto& exit = outcome_.ranks[setup_.victim].exit;
    const std::string who = rank_name(setup_.victim) + " (the victim)";
    if (!exit) return fail(who + " left no exit record: its wrapper did not see it end");
    if (outcome_.victim && outcome_.victim->pid != exit->pid) {
      fail("the victim record names process " + std::to_string(outcome_.victim->pid) + ", but " +
           rank_name(setup_.victim) + " ran as process " + std::to_string(exit->pid));
    }
    if (setup_.mode == "kill" &&
        !(WIFSIGNALED(exit->wait_status) && WTERMSIG(exit->wait_status) == SIGKILL)) {
      fail(who + " ended with " + status_text(exit->wait_status) + ", not SIGKILL");
    }
    // A silent victim lives on until the job is ended around it.
    const auto after = after_victim_s(setup_.victim);
    if (setup_.mode == "silent" && after && *after > deadline_after_victim_s(setup_)) {
      fail(who + " was still running " + seconds(*after) +
           " after it went silent: the job did not end within " +
           seconds(deadline_after_victim_s(setup_)));
    }
  }

  void check_survivor_end(int rank) {
    const auto& exit = outcome_.ranks[rank].exit;
    if (!exit)
      return fail(rank_name(rank) + " left no exit record: its wrapper did not see it end");
    if (WIFEXITED(exit->wait_status) && WEXITSTATUS(exit->wait_status) == 0)
      fail(rank_name(rank) + " exited with code 0: a survivor of a failed job must fail");
    const auto after = after_victim_s(rank);
    if (after && *after > deadline_after_victim_s(setup_)) {
      fail(rank_name(rank) + " ended " + seconds(*after) + " after " + rank_name(setup_.victim) +
           " left; the limit is " + seconds(deadline_after_victim_s(setup_)) + " (timeout " +
           seconds(setup_.timeout_s) + " + 10 s)");
    }
  }

  std::optional<TimeoutLine> survivor_message(int rank, const std::vector<Wording>& wordings) {
    const std::vector<std::string> lines = timeout_lines(outcome_.ranks[rank].log);
    const std::string who = rank_name(rank);
    if (lines.empty()) {
      fail(who + " printed no timeout message");
      return std::nullopt;
    }
    if (lines.size() > 1)
      fail(who + " printed " + std::to_string(lines.size()) +
           " timeout messages; the first must end it");
    std::smatch match;
    const auto matching = std::find_if(wordings.begin(), wordings.end(), [&](const Wording& w) {
      return std::regex_match(lines[0], match, w.pattern);
    });
    if (matching == wordings.end()) {
      std::string expected;
      for (const Wording& w : wordings)
        expected += "\n      expected: " + w.shown;
      fail(who + "'s timeout message is not in the library's words:\n      got:      " + lines[0] +
           expected);
      return std::nullopt;
    }
    const Wording& wording = *matching;
    std::map<std::string, std::string> field;
    for (size_t group = 0; group < wording.names.size(); ++group)
      field[wording.names[group]] = match[group + 1];
    TimeoutLine line;
    line.reported = wording.before_deadline;
    line.prefix_rank = std::stoi(field["prefix"]);
    line.waited_s = field["seconds"];
    line.waiting_rank = std::stoi(field["waiter"]);
    if (field.count("peer")) {
      line.peer = std::stoi(field["peer"]);
      line.names_peer = true;
    }
    if (field.count("pid")) {
      line.peer_pid = std::stoll(field["pid"]);
      line.peer_state = field["state"];
    }
    if (line.prefix_rank != rank)
      fail(who + "'s message is prefixed [rank " + std::to_string(line.prefix_rank) + "]");
    if (line.waiting_rank != rank)
      fail(who + "'s message says rank " + std::to_string(line.waiting_rank) +
           " waited: it must name itself");
    // The message prints the wait with one decimal. A reported failure ends the job before
    // the deadline (else the timeout would have said it first).
    if (wording.before_deadline) {
      if (std::stod(line.waited_s) >= setup_.timeout_s) {
        fail(who + " reported the failure after " + line.waited_s + " s, not before the " +
             seconds(setup_.timeout_s) + " timeout");
      }
    } else if (std::stod(line.waited_s) < setup_.timeout_s - 0.05) {
      fail(who + " timed out after " + line.waited_s + " s, before the configured " +
           seconds(setup_.timeout_s));
    }
    if (names(wording, "pid")) check_process_note(rank, line);
    return line;
  }

  // ring-shm adds the peer's process id and whether it still runs.
  void check_process_note(int rank, const TimeoutLine& line) {
    if (line.peer < 0 || line.peer >= setup_.ranks) return;  // check_named_peers says so
    const auto& peer_exit = outcome_.ranks[line.peer].exit;
    if (peer_exit && peer_exit->pid != line.peer_pid) {
      fail(rank_name(rank) + " names process " + std::to_string(line.peer_pid) + " for " +
           rank_name(line.peer) + ", which ran as process " + std::to_string(peer_exit->pid));
    }
    if (line.peer != setup_.victim) return;  // a survivor may or may not have exited yet
    const std::string state = setup_.mode == "kill" ? "has exited" : "is alive";
    if (line.peer_state != state) {
      fail(rank_name(rank) + " says the victim's process " + line.peer_state + "; it " + state);
    }
  }

  void check_named_peers(const std::map<int, TimeoutLine>& messages) {
    std::map<int, int> named;  // survivor -> the peer it says never answered
    for (const auto& [rank, line] : messages) {
      if (line.peer == rank || line.peer < 0 || line.peer >= setup_.ranks) {
        fail(rank_name(rank) + " names rank " + std::to_string(line.peer) +
             " as the peer that never answered: not another rank of the job");
      } else {
        named[rank] = line.peer;
      }
    }
    for (const auto& [rank, peer] : named) {
      if (setup_.silent_peer == SilentPeerRule::victim) {
        if (peer != setup_.victim) {
          fail(rank_name(rank) + " names " + rank_name(peer) +
               " as the peer that never answered; the victim is " + rank_name(setup_.victim));
        }
        continue;
      }
      std::vector<int> chain{rank};
      for (int at = peer; at != setup_.victim; at = named.at(at)) {
        const bool loops = std::find(chain.begin(), chain.end(), at) != chain.end();
        chain.push_back(at);
        if (loops || !named.count(at)) {
          std::string path;
          for (int r : chain)
            path += (path.empty() ? "" : " -> ") + std::to_string(r);
          fail("the peers named from " + rank_name(rank) + " (" + path +
               ") never reach the victim, " + rank_name(setup_.victim));
          break;
        }
      }
    }
  }

  const DrillSetup& setup_;
  const DrillOutcome& outcome_;
  std::vector<std::string> failures_;
};

}  // namespace

SilentPeerRule parse_silent_peer_rule(const std::string& text) {
  if (text == "victim") return SilentPeerRule::victim;
  if (text == "chain") return SilentPeerRule::chain;
  throw std::runtime_error("--silent-peer must be victim or chain, not " + text);
}

std::vector<std::string> check_drill(const DrillSetup& setup, const DrillOutcome& outcome) {
  return Checker(setup, outcome).run();
}

std::string describe_outcome(const DrillSetup& setup, const DrillOutcome& outcome) {
  std::string text =
      "drill: " + setup.impl + ", " + std::to_string(setup.ranks) + " ranks, " +
      rank_name(setup.victim) + " " + (setup.mode == "kill" ? "killed" : "silent") + ", timeout " +
      seconds(setup.timeout_s) + "; survivors must end within " +
      seconds(reported_death(setup) ? kReportedWithinS : deadline_after_victim_s(setup)) +
      " of that\n";
  for (int rank = 0; rank < setup.ranks; ++rank) {
    const RankOutcome& ranked = outcome.ranks[rank];
    char line[160];
    std::string ended = "no exit record", when;
    if (ranked.exit) {
      ended = status_text(ranked.exit->wait_status);
      if (outcome.victim) {
        when = seconds((ranked.exit->ended_at_ns - outcome.victim->left_at_ns) / 1e9) +
               " after the victim left";
      }
    }
    std::snprintf(line, sizeof(line), "  rank %d %-8s  %-28s %s\n", rank,
                  rank == setup.victim ? "victim" : "survivor", ended.c_str(), when.c_str());
    text += line;
    for (const std::string& message : timeout_lines(ranked.log))
      text += "      " + message + "\n";
  }
  return text;
}

}  // namespace engine::drill
