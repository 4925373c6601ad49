"""``Result``: what grading one (student, assignment) pair gave, as the reports and the
gradebook read it (``result.json`` in the pair's folder: the unit a batch job hands back)."""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

# a pair's status: "graded", "not a notebook", "refused" (a link), "no submission" (in a folder
# of submissions without a gradebook), "grading failed" (the grader's own error)
GRADED = "graded"


def short(text: str, limit: int = 160) -> str:
    """``text`` as a note: on one line, without terminal colours, at most ``limit`` characters."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip().replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Result:
    student: str
    assignment: str
    scores: dict[int, float]  # exercise -> autograded points earned
    max_score: float  # autograded points of the assignment
    status: str
    notes: list[str]  # what the student reads
    sandbox: str = "yes"
    cell_scores: dict[str, float] = field(default_factory=dict)  # test cell grade id -> points
    exercise_notes: dict[int, str] = field(default_factory=dict)  # exercise -> why points were lost
    flags: list[str] = field(default_factory=list)  # for the instructor only
    manual_points: float = 0.0  # points of the cells graded by hand (formgrader)
    submitted_at: str | None = None  # nbgrader's timestamp.txt, as written
    sha256: str | None = None  # of the notebook that was graded (its bytes as handed in)
    source_sha256: str = ""  # of the source notebook it was graded against

    @property
    def total(self) -> float:
        return sum(self.scores.values())

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Result:
        data = dict(data)
        data["scores"] = {int(k): float(v) for k, v in data["scores"].items()}
        data["exercise_notes"] = {int(k): v for k, v in data.get("exercise_notes", {}).items()}
        return cls(**data)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Result:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
