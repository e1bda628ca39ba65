#include "nn/lr_schedule.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>
#include <optional>
#include <utility>

#include "kernels/error.h"

namespace engine::nn {
namespace {

// 'text', built by appending: g++ 12 warns falsely (-Wrestrict) on "'" + std::string(...).
std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.append(1, '\'').append(text).append(1, '\'');
  return out;
}

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

std::string number(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

[[noreturn]] void invalid(const std::string& what) {
  fail("lr schedule: " + what);
}

bool positive_finite(double v) {
  return v > 0 && std::isfinite(v);
}

// Each returns what is wrong, "" when nothing is.
std::string problem(const ConstantLr&) {
  return {};
}

std::string problem(const StepLr& s) {
  if (s.step_size < 1) return "step: step_size must be >= 1, got " + std::to_string(s.step_size);
  if (!positive_finite(s.gamma)) return "step: gamma must be > 0, got " + number(s.gamma);
  return {};
}

std::string problem(const MultiStepLr& m) {
  if (!positive_finite(m.gamma)) return "multistep: gamma must be > 0, got " + number(m.gamma);
  for (size_t i = 0; i < m.milestones.size(); ++i) {
    const int64_t previous = i == 0 ? 0 : m.milestones[i - 1];
    if (m.milestones[i] <= previous) {
      return "multistep: milestones must be strictly increasing epochs >= 1, got " +
             std::to_string(m.milestones[i]) + (i == 0 ? "" : " after " + std::to_string(previous));
    }
  }
  return {};
}

std::string problem(const CosineLr& c) {
  if (c.t_max < 1) return "cosine: t_max must be >= 1, got " + std::to_string(c.t_max);
  if (!std::isfinite(c.eta_min)) return "cosine: eta_min must be finite";
  return {};
}

std::string problem(const OneCycleLr& o) {
  if (!(o.max_lr >= 0) || !std::isfinite(o.max_lr)) {
    return "onecycle: max_lr must be >= 0 (0: the base lr), got " + number(o.max_lr);
  }
  if (o.total_steps < 1) {
    return "onecycle: total_steps must be >= 1, got " + std::to_string(o.total_steps);
  }
  if (!(o.pct_start >= 0 && o.pct_start <= 1)) {
    return "onecycle: pct_start must be in [0, 1], got " + number(o.pct_start);
  }
  if (!positive_finite(o.div_factor)) return "onecycle: div_factor must be > 0";
  if (!positive_finite(o.final_div_factor)) return "onecycle: final_div_factor must be > 0";
  return {};
}

std::string problem(const PolyLr& p) {
  if (!positive_finite(p.power)) return "poly: power must be > 0, got " + number(p.power);
  if (!(p.end_lr >= 0) || !std::isfinite(p.end_lr)) {
    return "poly: end_lr must be >= 0, got " + number(p.end_lr);
  }
  if (p.warmup_steps < 0) return "poly: warmup must be >= 0";
  if (p.total_steps <= p.warmup_steps) {
    return "poly: total_steps (" + std::to_string(p.total_steps) + ") must exceed the warmup's " +
           std::to_string(p.warmup_steps) + " steps";
  }
  return {};
}

// Per optimizer step, as PolyLr says; past total_steps it stays at end_lr.
double poly_rate(const PolyLr& p, double base_lr, int64_t step) {
  if (step < p.warmup_steps) {
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(p.warmup_steps);
  }
  const double decay_steps = static_cast<double>(p.total_steps - p.warmup_steps);
  const double done = std::min(static_cast<double>(step - p.warmup_steps), decay_steps);
  return p.end_lr + (base_lr - p.end_lr) * std::pow(1 - done / decay_steps, p.power);
}

bool per_step(const LrScheduleKind& kind) {
  return std::holds_alternative<OneCycleLr>(kind) || std::holds_alternative<PolyLr>(kind);
}

std::string schedule_problem(const LrSchedule& schedule) {
  if (schedule.steps_per_epoch < 1) {
    return "steps_per_epoch must be >= 1, got " + std::to_string(schedule.steps_per_epoch);
  }
  const LinearWarmup& w = schedule.warmup;
  if (w.epochs < 0) return "warmup epochs must be >= 0, got " + std::to_string(w.epochs);
  if (w.epochs > 0 && !(w.start_factor > 0 && w.start_factor <= 1)) {
    return "warmup start_factor must be in (0, 1] (as LinearLR), got " + number(w.start_factor);
  }
  if (w.epochs > 0 && std::holds_alternative<OneCycleLr>(schedule.kind)) {
    return "onecycle takes no warmup (it warms up over pct_start)";
  }
  if (w.epochs > 0 && std::holds_alternative<PolyLr>(schedule.kind)) {
    return "poly takes no LinearLR warmup (it has its own, per step)";
  }
  return std::visit([](const auto& kind) { return problem(kind); }, schedule.kind);
}

// The closed forms (_get_closed_form_lr) at scheduler epoch `epoch` of the main schedule.
double epoch_rate(const LrScheduleKind& kind, double base_lr, int64_t epoch) {
  return std::visit(
      Overloaded{
          [&](const ConstantLr&) { return base_lr; },
          [&](const StepLr& s) {
            return base_lr * std::pow(s.gamma, static_cast<double>(epoch / s.step_size));
          },
          [&](const MultiStepLr& m) {
            const auto passed = std::upper_bound(m.milestones.begin(), m.milestones.end(), epoch) -
                                m.milestones.begin();
            return base_lr * std::pow(m.gamma, static_cast<double>(passed));
          },
          [&](const CosineLr& c) {
            const double angle =
                std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(c.t_max);
            return c.eta_min + (base_lr - c.eta_min) * (1 + std::cos(angle)) / 2;
          },
          [&](const OneCycleLr&) -> double { invalid("onecycle is not an epoch schedule"); },
          [&](const PolyLr&) -> double { invalid("poly is not an epoch schedule"); },
      },
      kind);
}

// OneCycleLR.get_lr with anneal_strategy="cos", in PyTorch's operation order.
double one_cycle_rate(const OneCycleLr& o, double base_lr, int64_t step) {
  if (step > o.total_steps) {
    invalid("onecycle: step " + std::to_string(step) + " is past total_steps " +
            std::to_string(o.total_steps) + " (PyTorch raises too)");
  }
  struct Phase {
    double end_step, start_lr, end_lr;
  };
  const double max_lr = o.max_lr > 0 ? o.max_lr : base_lr;
  const double initial_lr = max_lr / o.div_factor;
  const double min_lr = initial_lr / o.final_div_factor;
  const double total = static_cast<double>(o.total_steps);
  std::vector<Phase> phases;
  phases.push_back({o.pct_start * total - 1, initial_lr, max_lr});
  if (o.three_phase) phases.push_back({2 * o.pct_start * total - 2, max_lr, initial_lr});
  phases.push_back({total - 1, o.three_phase ? initial_lr : max_lr, min_lr});
  const double at = static_cast<double>(step);
  double start_step = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& phase = phases[i];
    if (at <= phase.end_step || i + 1 == phases.size()) {
      if (phase.end_step == start_step) {
        invalid("onecycle: phase " + std::to_string(i + 1) + " is empty at step " +
                std::to_string(step) + " (pct_start " + number(o.pct_start) + ", total_steps " +
                std::to_string(o.total_steps) + "; PyTorch divides by zero)");
      }
      const double pct = (at - start_step) / (phase.end_step - start_step);
      const double cos_out = std::cos(std::numbers::pi * pct) + 1;
      return phase.end_lr + (phase.start_lr - phase.end_lr) / 2.0 * cos_out;
    }
    start_step = phase.end_step;
  }
  return min_lr;  // not reached: the last phase always answers
}

}  // namespace

void validate_lr_schedule(const LrSchedule& schedule) {
  if (const std::string what = schedule_problem(schedule); !what.empty()) invalid(what);
}

double learning_rate(const LrSchedule& schedule, double base_lr, int64_t step) {
  validate_lr_schedule(schedule);
  if (!(base_lr >= 0) || !std::isfinite(base_lr))
    invalid("base lr must be >= 0, got " + number(base_lr));
  if (step < 0) invalid("step must be >= 0, got " + std::to_string(step));
  if (const auto* one_cycle = std::get_if<OneCycleLr>(&schedule.kind)) {
    return one_cycle_rate(*one_cycle, base_lr, step);
  }
  if (const auto* poly = std::get_if<PolyLr>(&schedule.kind))
    return poly_rate(*poly, base_lr, step);
  const int64_t epoch = step / schedule.steps_per_epoch;
  const LinearWarmup& w = schedule.warmup;
  if (epoch < w.epochs) {
    return base_lr * (w.start_factor + (1.0 - w.start_factor) * static_cast<double>(epoch) /
                                           static_cast<double>(w.epochs));
  }
  return epoch_rate(schedule.kind, base_lr, epoch - w.epochs);
}

namespace {

constexpr std::string_view kKindChoices = "constant, step, multistep, cosine, onecycle, poly";

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return s;
}

// The items after "KIND:", consumed by the kind's parser; what is left over is an error.
class FlagItems {
 public:
  FlagItems(std::string_view text, std::string_view kind, std::string_view list,
            std::string_view takes)
      : text_(text), kind_(kind), takes_(takes) {
    while (!list.empty()) {
      const size_t comma = list.find(',');
      const std::string_view item = trim(list.substr(0, comma));
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      if (item.empty()) error("an empty item");
      const size_t equals = item.find('=');
      if (equals == std::string_view::npos) {
        bare_.push_back(item);
        continue;
      }
      const std::string_view key = trim(item.substr(0, equals));
      for (const auto& [k, v] : keyed_)
        if (k == key) error(quoted(key) + " is given twice");
      keyed_.push_back({key, trim(item.substr(equals + 1))});
    }
  }

  [[noreturn]] void error(const std::string& what) const {
    fail("lr schedule '" + std::string(text_) + "': " + what + "; " + std::string(kind_) +
         " takes " + std::string(takes_) + " (kinds: " + std::string(kKindChoices) + ")");
  }

  std::optional<std::string_view> take(std::string_view key) {
    for (auto it = keyed_.begin(); it != keyed_.end(); ++it) {
      if (it->first != key) continue;
      const std::string_view value = it->second;
      keyed_.erase(it);
      return value;
    }
    return std::nullopt;
  }
  std::vector<std::string_view> take_bare() { return std::exchange(bare_, {}); }

  int64_t integer(std::string_view key, std::string_view value) const {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size()) {
      error(quoted(value) + " is not an integer for " + std::string(key));
    }
    return v;
  }
  int64_t integer_or(std::string_view key, int64_t fallback) {
    const auto value = take(key);
    return value ? integer(key, *value) : fallback;
  }
  double real_or(std::string_view key, double fallback) {
    const auto value = take(key);
    if (!value) return fallback;
    double v = 0;
    const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), v);
    if (ec != std::errc() || end != value->data() + value->size() || !std::isfinite(v)) {
      error(quoted(*value) + " is not a number for " + std::string(key));
    }
    return v;
  }
  bool boolean_or(std::string_view key, bool fallback) {
    const auto value = take(key);
    if (!value) return fallback;
    if (*value == "true" || *value == "1") return true;
    if (*value == "false" || *value == "0") return false;
    error(quoted(*value) + " is not true or false for " + std::string(key));
  }

  void finish() const {
    if (!bare_.empty()) error(quoted(bare_.front()) + " is not key=value");
    if (!keyed_.empty()) {
      error(quoted(keyed_.front().first) + " is not an option of " + std::string(kind_));
    }
  }

 private:
  std::string_view text_, kind_, takes_;
  std::vector<std::string_view> bare_;
  std::vector<std::pair<std::string_view, std::string_view>> keyed_;
};

constexpr std::string_view kWarmupTakes = "warmup=EPOCHS, warmup_factor=X";

LinearWarmup parse_warmup(FlagItems& items) {
  LinearWarmup w;
  w.epochs = items.integer_or("warmup", 0);
  w.start_factor = items.real_or("warmup_factor", w.start_factor);
  return w;
}

}  // namespace

LrSchedule parse_lr_schedule(std::string_view text, const TrainingLength& length) {
  if (length.epochs < 1 || length.steps_per_epoch < 1) {
    fail("parse_lr_schedule('" + std::string(text) +
         "'): epochs and steps_per_epoch must be >= 1, got " + std::to_string(length.epochs) +
         " and " + std::to_string(length.steps_per_epoch));
  }
  const size_t colon = text.find(':');
  const std::string_view kind = trim(text.substr(0, colon));
  const std::string_view list = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  LrSchedule schedule;
  schedule.steps_per_epoch = length.steps_per_epoch;
  const auto parse = [&](std::string_view takes, const auto& body) {
    FlagItems items(text, kind, list, takes);
    body(items);
    items.finish();
  };
  const std::string warmup_takes = ", " + std::string(kWarmupTakes);
  if (kind == "constant") {
    parse(kWarmupTakes, [&](FlagItems& items) { schedule.warmup = parse_warmup(items); });
  } else if (kind == "step") {
    parse("N or size=N, gamma=G" + warmup_takes, [&](FlagItems& items) {
      StepLr s;
      const std::vector<std::string_view> bare = items.take_bare();
      if (bare.size() > 1) items.error("more than one step size");
      const auto size = items.take("size");
      if (size && !bare.empty()) items.error("the step size is given twice");
      if (size) s.step_size = items.integer("size", *size);
      if (!bare.empty()) s.step_size = items.integer("the step size", bare.front());
      s.gamma = items.real_or("gamma", s.gamma);
      schedule.warmup = parse_warmup(items);
      schedule.kind = s;
    });
  } else if (kind == "multistep") {
    parse("M1,M2,... (epochs), gamma=G" + warmup_takes, [&](FlagItems& items) {
      MultiStepLr m;
      for (std::string_view milestone : items.take_bare())
        m.milestones.push_back(items.integer("a milestone", milestone));
      if (m.milestones.empty()) items.error("no milestones");
      m.gamma = items.real_or("gamma", m.gamma);
      schedule.warmup = parse_warmup(items);
      schedule.kind = m;
    });
  } else if (kind == "cosine") {
    parse("t_max=N, eta_min=X" + warmup_takes, [&](FlagItems& items) {
      CosineLr c;
      schedule.warmup = parse_warmup(items);
      c.t_max = items.integer_or("t_max", length.epochs - schedule.warmup.epochs);
      c.eta_min = items.real_or("eta_min", c.eta_min);
      schedule.kind = c;
    });
  } else if (kind == "onecycle") {
    parse(
        "max_lr=X, total_steps=N, pct_start=X, div_factor=X, final_div_factor=X, "
        "three_phase=true|false",
        [&](FlagItems& items) {
          OneCycleLr o;
          o.max_lr = items.real_or("max_lr", o.max_lr);
          o.total_steps = items.integer_or("total_steps", length.epochs * length.steps_per_epoch);
          o.pct_start = items.real_or("pct_start", o.pct_start);
          o.div_factor = items.real_or("div_factor", o.div_factor);
          o.final_div_factor = items.real_or("final_div_factor", o.final_div_factor);
          o.three_phase = items.boolean_or("three_phase", o.three_phase);
          schedule.kind = o;
        });
  } else if (kind == "poly") {
    parse("power=P, end_lr=X, warmup=EPOCHS, total_steps=N", [&](FlagItems& items) {
      PolyLr p;
      p.power = items.real_or("power", p.power);
      p.end_lr = items.real_or("end_lr", p.end_lr);
      p.warmup_steps = items.integer_or("warmup", 0) * length.steps_per_epoch;
      p.total_steps = items.integer_or("total_steps", length.epochs * length.steps_per_epoch);
      schedule.kind = p;
    });
  } else {
    fail("lr schedule '" + std::string(text) + "': unknown kind '" + std::string(kind) +
         "'; choices: " + std::string(kKindChoices) + " (e.g. multistep:30,60,80)");
  }
  if (const std::string what = schedule_problem(schedule); !what.empty()) {
    fail("lr schedule '" + std::string(text) + "' (" + std::to_string(length.epochs) +
         " epochs): " + what);
  }
  return schedule;
}

std::string describe(const LrSchedule& schedule) {
  std::string text = std::visit(
      Overloaded{
          [](const ConstantLr&) { return std::string("constant"); },
          [](const StepLr& s) {
            return "step(step_size=" + std::to_string(s.step_size) + ", gamma=" + number(s.gamma) +
                   ")";
          },
          [](const MultiStepLr& m) {
            std::string milestones;
            for (int64_t e : m.milestones)
              milestones += (milestones.empty() ? "" : ", ") + std::to_string(e);
            return "multistep(milestones=[" + milestones + "], gamma=" + number(m.gamma) + ")";
          },
          [](const CosineLr& c) {
            return "cosine(t_max=" + std::to_string(c.t_max) + ", eta_min=" + number(c.eta_min) +
                   ")";
          },
          [](const OneCycleLr& o) {
            return "onecycle(max_lr=" + (o.max_lr > 0 ? number(o.max_lr) : std::string("base")) +
                   ", total_steps=" + std::to_string(o.total_steps) +
                   ", pct_start=" + number(o.pct_start) + ", div_factor=" + number(o.div_factor) +
                   ", final_div_factor=" + number(o.final_div_factor) +
                   (o.three_phase ? ", three_phase" : "") + ") per step";
          },
          [](const PolyLr& p) {
            return "poly(power=" + number(p.power) + ", end_lr=" + number(p.end_lr) +
                   ", warmup_steps=" + std::to_string(p.warmup_steps) +
                   ", total_steps=" + std::to_string(p.total_steps) + ") per step";
          },
      },
      schedule.kind);
  if (per_step(schedule.kind)) return text;
  text += schedule.steps_per_epoch == 1
              ? " per step"
              : " per " + std::to_string(schedule.steps_per_epoch) + " steps";
  if (schedule.warmup.epochs > 0) {
    text += " after linear warmup from " + number(schedule.warmup.start_factor) + " over " +
            std::to_string(schedule.warmup.epochs) + " epochs";
  }
  return text;
}

}  // namespace engine::nn
