"""Schedule primitives as functions `(schedule, handles, ...) -> new function`, one family per file.

They read the schedule's current function, check every precondition first (raising
ScheduleError), and return the new function; `Schedule` records them in the trace.
"""

from tessel.schedule.primitives.annotate import annotate, set_kind, vectorize
from tessel.schedule.primitives.fuse_reorder import fuse, reorder
from tessel.schedule.primitives.split import split

__all__ = ["annotate", "fuse", "reorder", "set_kind", "split", "vectorize"]
