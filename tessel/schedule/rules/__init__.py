"""Schedule rules: the default schedule every kernel gets without tuning (issue 15), built from
the primitives of `tessel.schedule` so that its trace shows and replays every step. Each rule is
a plan and its application (tessel.schedule.rules.plan); `schedule_with_plans` reports both."""

from tessel.schedule.rules.default import ScheduleReport, default_schedule, schedule_with_plans
from tessel.schedule.rules.plan import Applied, Refusal

__all__ = ["Applied", "Refusal", "ScheduleReport", "default_schedule", "schedule_with_plans"]
