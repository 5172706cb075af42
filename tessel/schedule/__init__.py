"""Schedules: TensorIR's primitives over an immutable function, with a replayable trace."""

from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, BufferAxisRV, LoopRV
from tessel.schedule.schedule import Schedule
from tessel.schedule.trace import Instruction, Trace

__all__ = ["BlockRV", "BufferAxisRV", "Instruction", "LoopRV", "Schedule", "ScheduleError", "Trace"]
