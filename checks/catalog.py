"""The workshops of the book, in book order.

Standard library only: `python -m checks list` and the test that proves it import this module
with no third-party package available.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workshop:
    id: str  # file stem everywhere: kernels/<id>.py, references/<id>.py, checks/<id>.py
    number: int  # notebooks/NN_<id>.ipynb
    level: str
    title: str

    @property
    def notebook(self) -> str:
        return f"notebooks/{self.number:02d}_{self.id}.ipynb"


WORKSHOPS: tuple[Workshop, ...] = (
    Workshop("foundations", 0, "foundations", "Foundations recap: program ids, masks, a row softmax"),
    Workshop("strided_softmax", 1, "intermediate", "Softmax over any dimension of a strided tensor"),
    Workshop("softmax_backward", 2, "intermediate", "Softmax backward without a Jacobian"),
    Workshop("fused_gemm", 3, "intermediate", "Fused GEMM with an FP32 bias + ReLU epilogue"),
    Workshop("online_normalization", 4, "advanced", "Online normalization: a mergeable state"),
    Workshop("split_softmax", 5, "advanced", "Split softmax for rows up to 131072 wide"),
    Workshop("streaming_attention", 6, "advanced", "Streaming attention with online rescaling"),
)

WORKSHOP_IDS: tuple[str, ...] = tuple(w.id for w in WORKSHOPS)


def get(workshop_id: str) -> Workshop:
    for workshop in WORKSHOPS:
        if workshop.id == workshop_id:
            return workshop
    raise ValueError(f"unknown workshop {workshop_id!r}; known: {', '.join(WORKSHOP_IDS)}")
