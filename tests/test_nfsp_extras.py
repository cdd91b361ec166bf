"""Torch and Stable-Baselines3 stay optional: nashzoo and the tabular learners work without them,
and asking for a neural or RL learner names the extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run_without(blocked: list[str], body: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\n"
    code += "".join(f"sys.modules[{name!r}] = None\n" for name in blocked)
    code += textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_without_torch_tabular_learners_work_and_neural_ones_name_their_extra():
    result = _run_without(
        ["torch"],
        """
        import nashzoo
        from nashzoo.agents import learner_names, make_learner
        from nashzoo.train import train
        assert {"nfsp", "deep_cfr", "ppo", "dqn"} <= set(learner_names())
        result = train("kuhn_poker", "cfr_plus", iterations=20, progress=False)
        print("cfr_plus", round(result.history[-1].exploitability, 4))
        for name in ("nfsp", "deep_cfr", "ppo", "dqn"):
            try:
                make_learner(name, "kuhn_poker", 0)
            except ImportError as err:
                print(name, "->", err)
        from nashzoo.envs.single_agent import SingleAgentEnv
        SingleAgentEnv("kuhn_poker").reset(seed=0)
        print("single-agent env ok")
        """,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "cfr_plus 0.0" in out
    assert "nfsp -> learner 'nfsp' needs the optional extra 'neural'" in out
    assert "pip install 'nashzoo[neural]'" in out
    assert "deep_cfr -> learner 'deep_cfr' needs the optional extra 'neural'" in out
    assert "ppo -> learner 'ppo' needs the optional extra 'rl'" in out
    assert "dqn -> learner 'dqn' needs the optional extra 'rl'" in out
    assert "single-agent env ok" in out


def test_without_stable_baselines3_the_rl_learners_name_their_extra():
    result = _run_without(
        ["stable_baselines3", "sb3_contrib"],
        """
        from nashzoo.agents import make_learner
        print(make_learner("nfsp", "kuhn_poker", 0).name)
        try:
            make_learner("ppo", "kuhn_poker", 0)
        except ImportError as err:
            print("ppo ->", err)
        """,
    )
    assert result.returncode == 0, result.stderr
    assert "nfsp" in result.stdout
    assert "ppo -> learner 'ppo' needs the optional extra 'rl'" in result.stdout
