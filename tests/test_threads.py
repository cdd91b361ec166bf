"""limit_threads: one thread per run in BLAS, OpenMP and torch, even after numpy is loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nashzoo.train.threads import THREAD_VARIABLES, limit_threads

# numpy (and torch, where installed) loaded first with their default pools, as in any process
# that reaches a learner; then limit_threads, then what every pool and the environment say.
SCRIPT = """
import json, os, numpy as np
try:
    import torch
except ImportError:
    torch = None
from threadpoolctl import threadpool_info
from nashzoo.train.threads import limit_threads, THREAD_VARIABLES
np.ones((256, 64)) @ np.ones((64, 64))
limit_threads()
print(json.dumps({
    "pools": [info["num_threads"] for info in threadpool_info()],
    "env": [os.environ[v] for v in THREAD_VARIABLES],
    "torch": None if torch is None else torch.get_num_threads(),
}))
"""


def test_limit_threads_holds_already_loaded_pools_torch_and_children_to_one_thread():
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["pools"] and set(seen["pools"]) == {1}
    assert seen["env"] == ["1"] * len(THREAD_VARIABLES)
    assert seen["torch"] in (None, 1)


def test_limit_threads_refuses_fewer_than_one_thread():
    with pytest.raises(ValueError, match="at least 1"):
        limit_threads(0)


RESTORE = """
import json, os, numpy as np
try:
    import torch
except ImportError:
    torch = None
from threadpoolctl import threadpool_info
from nashzoo.train.threads import limit_threads
np.ones((256, 64)) @ np.ones((64, 64))
pools = lambda: [info["num_threads"] for info in threadpool_info()]
torch_threads = lambda: None if torch is None else torch.get_num_threads()
before = (pools(), os.environ.get("OPENBLAS_NUM_THREADS"), torch_threads())
with limit_threads():
    inside = (pools(), os.environ.get("OPENBLAS_NUM_THREADS"), torch_threads())
after = (pools(), os.environ.get("OPENBLAS_NUM_THREADS"), torch_threads())
print(json.dumps({"before": before, "inside": inside, "after": after}))
"""


def test_a_limit_used_as_a_context_manager_puts_the_callers_settings_back():
    # The serial race backend runs jobs in the caller's process: its settings must come back.
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "2"
    out = subprocess.run(
        [sys.executable, "-c", RESTORE], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"][1] == "2"
    assert set(seen["inside"][0]) == {1} and seen["inside"][1] == "1"
    assert seen["inside"][2] in (None, 1)
    assert seen["after"] == seen["before"]


TORCH_UNDER_THE_LIMIT = """
import json
from nashzoo.train.threads import limit_threads
with limit_threads():
    import torch  # first imported under the limit, as a serial race's neural learner does
print(json.dumps(torch.get_num_threads()))
"""


@pytest.mark.parametrize("omp", [None, "3"])
def test_a_torch_first_imported_under_the_limit_gets_its_own_default_back(omp):
    # It read the limit's OMP_NUM_THREADS=1 and kept it: the caller's torch stayed on one thread.
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if omp is not None:
        env["OMP_NUM_THREADS"] = omp
    fresh = "import json, torch; print(json.dumps(torch.get_num_threads()))"
    seen = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
            ).stdout.splitlines()[-1]
        )
        for script in (TORCH_UNDER_THE_LIMIT, fresh)
    ]
    assert seen[0] == seen[1]
