"""A tabular learner's checkpoint whose tables were shrunk (float32, float16) or widened
(longdouble) by another tool loads as float64, the tables' own type, and trains on as the
original: float32 tables had been kept, and a million Kuhn iterations of CFR then ended at
NashConv 1e-3 instead of 6e-6; float16 failed at the first step deep inside the kernel."""

from __future__ import annotations

import io

import numpy as np
import pytest

from nashzoo.agents import load_learner, make_learner
from nashzoo.io import CheckpointError


def _shrunk(path, dtype) -> tuple[bytes, bool]:
    """The checkpoint with its float arrays cast to ``dtype``, and whether that overflowed."""
    with np.load(path) as data, np.errstate(over="ignore"):
        entries = {k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in data.items()}
    buffer = io.BytesIO()
    np.savez(buffer, **entries)
    finite = all(np.isfinite(v).all() for v in entries.values() if v.dtype.kind == "f")
    return buffer.getvalue(), not finite


@pytest.mark.parametrize("name", ["cfr", "cfr_plus", "dcfr", "xfp", "os_mccfr", "es_mccfr"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.longdouble])
def test_tables_of_another_float_type_load_as_float64(tmp_path, name, dtype):
    learners = [make_learner(name, "kuhn_poker", seat, seed=3) for seat in (0, 1)]
    for _ in range(5):
        for me, other in ((0, 1), (1, 0)):
            learners[me].step(learners[other].current_policy())
    learners[0].save(tmp_path / "seat0.npz")
    data, overflowed = _shrunk(tmp_path / "seat0.npz", dtype)
    (tmp_path / "shrunk.npz").write_bytes(data)
    if overflowed:  # MCCFR's regrets past float16's 65,504: what is left is not the run
        with pytest.raises(CheckpointError, match="non-finite value"):
            load_learner(tmp_path / "shrunk.npz")
        return
    loaded = load_learner(tmp_path / "shrunk.npz")
    tables = [v for v in loaded._state_arrays().values() if v.dtype.kind == "f"]
    assert tables and all(t.dtype == np.float64 for t in tables)
    loaded.step(learners[1].current_policy())  # float16 and longdouble failed here
    probs = loaded.average_policy().probs
    assert probs.dtype == np.float64 and np.isfinite(probs).all()
