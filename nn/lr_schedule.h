// Learning-rate schedules as PyTorch 1.13's torch.optim.lr_scheduler produces them, as a
// pure function of the number of optimizer steps taken, so that a resumed run needs no
// scheduler state beyond its step count.
//
// Units. StepLR, MultiStepLR, CosineAnnealingLR and the warmup count scheduler steps, which
// the torchvision recipes take once per epoch: the rate of optimizer step s is PyTorch's at
// last_epoch = s / steps_per_epoch (rounded down), i.e. the loop
//     for epoch: for each of steps_per_epoch batches: optimizer.step()
//                scheduler.step()
// steps_per_epoch = 1 is PyTorch's scheduler.step() after every optimizer step, with every
// length counted in optimizer steps. OneCycleLR is always per optimizer step (its usage in
// PyTorch): its total_steps counts optimizer steps and steps_per_epoch does not apply.
//
// Warmup. A warmup of W > 0 epochs is
//     SequentialLR(optimizer, [LinearLR(optimizer, start_factor, end_factor=1.0,
//                                       total_iters=W), main], milestones=[W])
// as torchvision's references/classification/train.py builds it (--lr-warmup-epochs,
// --lr-warmup-method linear, --lr-warmup-decay): epochs e < W run at
// base_lr * (start_factor + (1 - start_factor) * e / W), and from epoch W on the main
// schedule runs from its own epoch 0 (SequentialLR restarts it at the milestone: StepLR's
// step_size, MultiStepLR's milestones and CosineAnnealingLR's T_max count from the end of the
// warmup). For the constant kind it is LinearLR alone. OneCycleLR has its own warmup and
// takes none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace engine::nn {

// base_lr throughout (no scheduler).
struct ConstantLr {};

// StepLR(step_size, gamma): base_lr * gamma^(epoch / step_size).
struct StepLr {
  int64_t step_size = 30;  // torchvision's --lr-step-size default
  double gamma = 0.1;
};

// MultiStepLR(milestones, gamma): base_lr * gamma^(number of milestones <= epoch).
struct MultiStepLr {
  std::vector<int64_t> milestones;  // strictly increasing, >= 1
  double gamma = 0.1;
};

// CosineAnnealingLR(T_max, eta_min) by its closed form (_get_closed_form_lr):
// eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / t_max)) / 2. PyTorch's chainable
// recurrence, stepped once per epoch from 0, gives the same values (to rounding), past
// t_max too (the rate rises again).
struct CosineLr {
  int64_t t_max = 0;
  double eta_min = 0;
};

// OneCycleLR(max_lr, total_steps, pct_start, anneal_strategy="cos", div_factor,
// final_div_factor, three_phase, cycle_momentum=False): from max_lr / div_factor up to max_lr
// over pct_start of the steps, then cosine down to max_lr / div_factor / final_div_factor
// (three_phase: back to max_lr / div_factor first, then down). Momentum is not cycled:
// PyTorch's default cycle_momentum=True also changes the optimizer's momentum.
// The rate is defined for steps 0..total_steps; PyTorch raises beyond, and so does this.
struct OneCycleLr {
  double max_lr = 0;  // 0: base_lr (PyTorch ignores the optimizer's lr; this takes it as max_lr)
  int64_t total_steps = 0;
  double pct_start = 0.3;
  double div_factor = 25;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

// MLPerf ResNet-50's polynomial decay with linear warmup (the reference's LARS recipe, also
// tf.compat.v1.train.polynomial_decay), per optimizer step s from 0, W = warmup_steps,
// T = total_steps:
//   s < W:  base_lr * (s + 1) / W                          (warmup from base_lr / W)
//   else:   end_lr + (base_lr - end_lr) * (1 - min(s - W, T - W) / (T - W))^power
// PyTorch 1.13 has no such scheduler (PolynomialLR comes in 2.0). It has its own warmup, per
// step, and takes no LinearWarmup.
struct PolyLr {
  double power = 2;
  double end_lr = 0;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;  // > warmup_steps
};

// LinearLR(start_factor, end_factor=1.0, total_iters=epochs) before the main schedule.
struct LinearWarmup {
  int64_t epochs = 0;          // 0: no warmup
  double start_factor = 0.01;  // torchvision's --lr-warmup-decay default (LinearLR's is 1/3)
};

using LrScheduleKind = std::variant<ConstantLr, StepLr, MultiStepLr, CosineLr, OneCycleLr, PolyLr>;

struct LrSchedule {
  LrScheduleKind kind = ConstantLr{};
  LinearWarmup warmup;
  int64_t steps_per_epoch = 1;  // optimizer steps per scheduler step (not for OneCycleLr)
};

// The rate of optimizer step `step` (0 for the first step): PyTorch's
// optimizer.param_groups[0]["lr"] after `step` optimizer steps and the scheduler steps that
// go with them. Throws engine::Error for an invalid schedule (see validate_lr_schedule),
// base_lr < 0 or not finite, step < 0, or a OneCycleLr step past total_steps.
double learning_rate(const LrSchedule& schedule, double base_lr, int64_t step);

// Throws engine::Error naming the field when the schedule is not one PyTorch would run.
void validate_lr_schedule(const LrSchedule& schedule);

// What a trainer knows that defaults depend on.
struct TrainingLength {
  int64_t epochs = 0;
  int64_t steps_per_epoch = 0;
};

// A trainer flag: KIND[:ITEM,ITEM,...], each ITEM key=value (or a bare integer where noted):
//   constant
//   step        [N | size=N] (30), gamma=G (0.1)
//   multistep   M1,M2,... (required, epochs), gamma=G (0.1)
//   cosine      t_max=N (epochs minus the warmup), eta_min=X (0)
//   onecycle    max_lr=X (the base lr), total_steps=N (epochs * steps_per_epoch),
//               pct_start=X (0.3), div_factor=X (25), final_div_factor=X (1e4),
//               three_phase=true|false (false)
//   poly        power=P (2), end_lr=X (0), warmup=EPOCHS (0, per step from base_lr / W),
//               total_steps=N (epochs * steps_per_epoch)
// and for every kind but onecycle and poly warmup=EPOCHS (0), warmup_factor=X (0.01), e.g.
// "multistep:30,60,80", "cosine:warmup=5,eta_min=1e-5", "onecycle:max_lr=0.4".
// Errors name the text, the item and the choices.
LrSchedule parse_lr_schedule(std::string_view text, const TrainingLength& length);

// One line for the log, e.g. "cosine(t_max=85, eta_min=0) per 500 steps after linear warmup
// from 0.01 over 5 epochs".
std::string describe(const LrSchedule& schedule);

}  // namespace engine::nn
