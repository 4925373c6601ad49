"""Late work: a course's own ``LateSubmissionPlugin`` for nbgrader (its interface, its config).

nbgrader computes how late a submission is from its ``timestamp.txt`` and the assignment's due
date (``nbgrader db assignment add NAME --duedate=...``) plus any extension, and asks the plugin
for the penalty; ``make grade`` asks it again for every submission each time it records grades
(a manual score changes what a share of the score is). In ``nbgrader_config.py``::

    c.AssignLatePenalties.plugin_class = "coursegrader.late.PerDayPenalty"
    c.PerDayPenalty.fraction_per_day = 0.10   # 10 % of the score per day late or part of one
"""
from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float


class PerDayPenalty(LateSubmissionPlugin):
    """``fraction_per_day`` of the score for each started day late, at most the whole score."""

    fraction_per_day = Float(0.10, help="Share of the score taken per day late (or part of one)."
                             ).tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        days = math.ceil(total_seconds_late / 86400)
        return min(score, round(score * self.fraction_per_day * days, 2))
