"""Schedule rules: the default schedule every kernel gets without tuning (issue 15), built from
the primitives of `tessel.schedule` so that its trace shows and replays every step."""

from tessel.schedule.rules.default import default_schedule

__all__ = ["default_schedule"]
