// MockBackend, scheduling: which events are ACTIVE, and when they go on and
// off their PMU (kernel/events/core.c event_sched_in()/event_sched_out(),
// ctx_sched_in()/ctx_sched_out(), ctx_resched(), merge_sched_in(),
// group_can_go_on(), perf_rotate_context()), with the x86 counter assignment
// of core events (x86_schedule_events()) and _perf_event_enable()/
// _perf_event_disable(). Multiplexing is the rotation at each tick
// (RotateCoreGroups(), called by Tick() in mock_time.cc).
#include <linux/perf_event.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "mocks/internal/mock_backend_impl.h"
#include "mocks/software_pmu.h"

namespace perftest::mock {
namespace {

// event->pmu_ctx->pmu: a software event in a hardware group lives in the
// leader's PMU context (perf_event_open() "move_group"/is_software_event()).
PmuId EffectivePmu(const MockEvent& e) {
  return e.pmu != PmuId::kCore && e.leader->pmu == PmuId::kCore ? PmuId::kCore : e.pmu;
}
// The PMU whose ctx_resched() schedules the event's group.
PmuId GroupPmu(const MockEvent& e) { return EffectivePmu(*e.leader); }

// The context an event is in (event->ctx): its task's, or CPU `cpu`'s.
bool SameContext(const MockEvent& a, const MockEvent& b) {
  return a.pid == b.pid && (a.pid != -1 || a.cpu == b.cpu);
}

}  // namespace

// inline: called per event by Reschedule() and the scheduling code of this
// file only (calling it from another file needs the `inline` dropped).
inline bool MockBackend::Schedulable(const MockEvent& ev) const {
  if (!ev.enabled || ev.deferred) return false;
  if (!ev.is_leader() && !ev.leader->enabled) return false;  // group scheduling
  if (ev.pid == -1) return true;                              // a CPU context always runs
  if (ev.exited || ev.pid != task_.tid) return false;         // only the current task's context runs
  return task_.running && (ev.cpu == -1 || ev.cpu == 0);      // the task runs on CPU 0
}

bool MockBackend::CountersFree(const std::vector<const MockEvent*>& joining) const {
  if (joining.empty()) return true;
  const int cpu = CountersCpu(*joining.front());
  std::vector<HwEvent> on;
  for (const auto& e : events_) {
    if (e->active && e->pmu == PmuId::kCore && CountersCpu(*e) == cpu) on.push_back(e->hw_event);
  }
  for (const MockEvent* e : joining) on.push_back(e->hw_event);
  return HardwareFits(on, profile_.hardware);
}

// ctx_sched_out()/ctx_sched_in() reduced: events that may no longer run go
// out; then software groups go in, in creation order (a software group always
// can: group_can_go_on() PERF_EV_CAP_SOFTWARE), a member only with its leader
// in; core-PMU groups go through ScheduleCoreGroups().
void MockBackend::Reschedule() {
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.active && (!Schedulable(e) || (!e.is_leader() && !e.leader->active))) SchedOut(e);
    // perf_event_groups_insert() at install time: group_index in creation
    // order (SchedOut() changes no group_index nor leader).
    if (e.is_leader() && e.group_index == 0) e.group_index = ++group_seq_;
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    MockEvent& e = *events_[i];
    if (e.active || !Schedulable(e)) continue;
    // A lone leader off the core PMU (most events) always goes on.
    const bool lone = e.is_leader() && e.siblings.empty() && e.pmu != PmuId::kCore;
    if (lone || MayScheduleIn(e)) SchedIn(e);
  }
  if (profile_.has_hardware) ScheduleCoreGroups();  // no core PMU, no core groups
}

bool MockBackend::MayScheduleIn(const MockEvent& e) const {
  if (!e.is_leader()) return e.leader->active && (e.pmu != PmuId::kCore || CountersFree({&e}));
  if (e.pmu == PmuId::kCore) return false;  // ScheduleCoreGroups()
  std::vector<const MockEvent*> group;
  for (const MockEvent* s : e.siblings) {
    if (s->pmu == PmuId::kCore && !s->active && Schedulable(*s)) group.push_back(s);
  }
  return group.empty() || CountersFree(group);
}


bool MockBackend::GroupCanGoOn(const MockEvent& leader, bool can_add_hw) const {
  for (const auto& e : events_) {
    if (!e->active || !e->is_leader() || e.get() == &leader || e->pmu != PmuId::kCore) continue;
    if (!SameContext(*e, leader)) continue;
    // "if (epc->exclusive) return 0": an exclusive group is on this PMU context.
    if (e->attr.exclusive) return false;
    // "if (event->attr.exclusive && !list_empty(get_event_list(event)))":
    // the pinned or flexible active list, as the group is pinned or not.
    if (leader.attr.exclusive && e->attr.pinned == leader.attr.pinned) return false;
  }
  return can_add_hw;
}

// perf_event_sched_in(): ctx_sched_in(cpuctx, EVENT_PINNED), (task_ctx,
// EVENT_PINNED), (cpuctx, EVENT_FLEXIBLE), (task_ctx, EVENT_FLEXIBLE); each
// pass visits the groups in group_index order (visit_groups_merge()) with
// merge_sched_in(): a group goes in whole if group_can_go_on() and its events
// find counters (group_sched_in()); one that stays INACTIVE clears can_add_hw
// for the rest of the pass and then, if pinned, goes to
// PERF_EVENT_STATE_ERROR (read(2) returns 0 until PERF_EVENT_IOC_ENABLE), else
// sets rotate_necessary (RotateCoreGroups()).
void MockBackend::ScheduleCoreGroups() {
  std::vector<MockEvent*> leaders;
  for (const auto& e : events_) {
    if (e->is_leader() && e->pmu == PmuId::kCore && !e->active && Schedulable(*e)) leaders.push_back(e.get());
  }
  std::stable_sort(leaders.begin(), leaders.end(), [](const MockEvent* a, const MockEvent* b) {
    if (a->attr.pinned != b->attr.pinned) return a->attr.pinned > b->attr.pinned;
    if ((a->pid == -1) != (b->pid == -1)) return a->pid == -1;  // the CPU context first
    return a->group_index < b->group_index;
  });
  // can_add_hw per pass: (context, pinned).
  std::map<std::tuple<pid_t, int, bool>, bool> can_add_hw;
  for (MockEvent* l : leaders) {
    bool& can = can_add_hw.try_emplace({l->pid, l->pid == -1 ? l->cpu : -1, l->attr.pinned != 0}, true).first->second;
    std::vector<const MockEvent*> group{l};
    for (const MockEvent* s : l->siblings) {
      if (s->pmu == PmuId::kCore && !s->active && Schedulable(*s)) group.push_back(s);
    }
    if (GroupCanGoOn(*l, can) && CountersFree(group)) {
      SchedIn(*l);
      for (MockEvent* s : l->siblings) {
        if (!s->active && Schedulable(*s)) SchedIn(*s);
      }
      continue;
    }
    can = false;
    if (l->attr.pinned) {
      l->enabled = false;  // ERROR < OFF: no enabled time, not schedulable
      l->error = true;
      // Linux 6.16+: "if (*perf_event_fasync(event)) event->pending_kill =
      // POLL_ERR;" then the wakeup (pending_irq -> perf_event_wakeup() ->
      // kill_fasync(SIGIO, POLL_ERR)); perf_poll() says EPOLLERR (PerfPoll()).
      SignalOverflow(*l, POLL_ERR);
    }
  }
}

// perf_rotate_context(): for each context with a flexible core group that
// could not go on (rotate_necessary), the first group in its flexible active
// list (else the first flexible group) moves to the end of the groups tree
// (rotate_ctx(): a new group_index), after the flexible groups are scheduled
// out; then they go in again in the new order.
void MockBackend::RotateCoreGroups() {
  std::vector<const MockEvent*> contexts;  // one representative leader per context needing rotation
  for (const auto& e : events_) {
    if (!e->is_leader() || e->pmu != PmuId::kCore || e->attr.pinned || e->active || !Schedulable(*e)) continue;
    bool seen = false;
    for (const MockEvent* c : contexts) seen |= SameContext(*c, *e);
    if (!seen) contexts.push_back(e.get());
  }
  if (contexts.empty()) return;
  for (const MockEvent* ctx : contexts) {
    MockEvent* pick = nullptr;
    for (int pass = 0; pass < 2 && pick == nullptr; ++pass) {
      for (const auto& e : events_) {
        if (!e->is_leader() || e->pmu != PmuId::kCore || e->attr.pinned || !SameContext(*e, *ctx)) continue;
        if (pass == 0 ? !e->active : !Schedulable(*e)) continue;
        if (pick == nullptr || e->group_index < pick->group_index) pick = e.get();
      }
    }
    if (pick != nullptr) pick->group_index = ++group_seq_;
  }
  for (const auto& e : events_) {
    if (e->active && e->pmu == PmuId::kCore && !e->leader->attr.pinned) SchedOut(*e);
  }
  Reschedule();
}

void MockBackend::SchedIn(MockEvent& ev) {
  if (ev.pmu == PmuId::kIntelPt && !PtStart(ev)) return;  // pt_event_add() failed: stays INACTIVE
  // event_sched_in(): "Unthrottle events, since we scheduled we might have
  // missed several ticks already".
  ev.active = true;
  if (ev.hw.interrupts == kMaxInterrupts) {
    ev.hw.interrupts = 0;
    LogThrottle(ev, /*unthrottle=*/true);
  }
  if (ev.pmu == PmuId::kCore) {
    // x86_schedule_events()/x86_assign_hw_event(): its fixed counter if free,
    // else the lowest free general-purpose one.
    std::vector<bool> gp(profile_.hardware.gp_counters, false), fixed(profile_.hardware.fixed_counters, false);
    for (const auto& e : events_) {
      if (e.get() == &ev || !e->active || e->pmu != PmuId::kCore || CountersCpu(*e) != CountersCpu(ev)) continue;
      if (e->counter_gp >= 0) gp[e->counter_gp] = true;
      if (e->counter_fixed >= 0) fixed[e->counter_fixed] = true;
    }
    ev.counter_gp = ev.counter_fixed = -1;
    if (ev.hw_event.fixed >= 0 && !fixed[ev.hw_event.fixed]) {
      ev.counter_fixed = ev.hw_event.fixed;
    } else {
      for (size_t i = 0; i < gp.size() && ev.counter_gp < 0; ++i) {
        if (!gp[i]) ev.counter_gp = static_cast<int>(i);
      }
    }
    // x86_perf_event_set_period(): a counting event's counter starts at
    // -max_period (and is re-armed there on overflow); its value carries
    // over a sched-out (period_left).
    const uint32_t width = profile_.hardware.counter_width;
    const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    if (!ev.is_sampling() && ev.pmc == 0) ev.pmc = (uint64_t{0} - MaxPeriod(width)) & mask;
  }
  SoftwareEventStart(ev, /*add=*/true);
  // Linux 6.18, measured with the rdpmc suite: the user page is rewritten when
  // the event goes in (ENABLE, each switch-in), not when it goes out.
  UpdateUserPage(ev);
}

void MockBackend::SchedOut(MockEvent& ev) {
  if (ev.pmu == PmuId::kIntelPt) PtStop(ev);
  SoftwareEventStop(ev);
  ev.active = false;
  ev.counter_gp = ev.counter_fixed = -1;
}

// _perf_event_enable() -> __perf_event_enable(): the event becomes INACTIVE,
// then ctx_resched(cpuctx, task_ctx, event->pmu_ctx->pmu): only the groups
// led from the event's own PMU are scheduled out and in again. A member whose
// leader is in another PMU (a minor-faults member of a task-clock leader, say)
// is therefore not scheduled in until the task is next switched in, or until
// something reschedules the leader's PMU (Linux 6.18: time_enabled grows,
// time_running and the count stay 0 meanwhile). An event in the ERROR state
// is cleared to OFF first.
void MockBackend::EnableEvent(MockEvent& ev) {
  if (ev.enabled) return;
  ev.error = false;
  ev.enabled = true;
  if (!ev.is_leader() && ev.leader->active && ev.pid != -1 && EffectivePmu(ev) != GroupPmu(ev)) ev.deferred = true;
  const PmuId resched = EffectivePmu(ev);
  for (const auto& e : events_) {
    if (e->deferred && GroupPmu(*e) == resched) e->deferred = false;
  }
  // __perf_event_enable() -> ctx_resched(event's pmu): that PMU's groups go
  // out and come back in group order, so the counters go to the oldest groups first.
  if (ev.pmu == PmuId::kCore) {
    for (const auto& e : events_) {
      if (e->active && e->pmu == PmuId::kCore && CountersCpu(*e) == CountersCpu(ev)) SchedOut(*e);
    }
  }
  Reschedule();
}

// _perf_event_disable(): out of the context; the user page is not rewritten.
void MockBackend::DisableEvent(MockEvent& ev) {
  if (!ev.enabled) return;
  ev.enabled = false;
  Reschedule();
}


}  // namespace perftest::mock
