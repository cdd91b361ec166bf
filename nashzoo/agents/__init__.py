"""Policies, agents and learners behind one interface.

Importing this package registers every tabular learner; neural and RL learners are registered
lazily so that torch and Stable-Baselines3 stay optional. :func:`register` adds a user's
learner and refuses a name another learner already holds. :func:`load_learner` reads a learner
checkpoint back (``device="cpu"`` for one written on a GPU, on a machine without CUDA).
"""

from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig
from nashzoo.agents.cfr import CFR, DCFR, CFRConfig, CFRPlus, CFRPlusConfig, DCFRConfig
from nashzoo.agents.fixed import FixedLearner, UniformLearner, fixed_policy, uniform_policy
from nashzoo.agents.loading import load_learner, load_policy_file
from nashzoo.agents.mccfr import (
    ESMCCFRConfig,
    ExternalSamplingMCCFR,
    OSMCCFRConfig,
    OutcomeSamplingMCCFR,
)
from nashzoo.agents.policy import (
    BatchPolicy,
    Infoset,
    Policy,
    PolicyError,
    TabularPolicy,
    UniformPolicy,
)
from nashzoo.agents.registry import (
    import_plugins,
    learner_class,
    learner_names,
    learning_learner_names,
    make_learner,
    register,
    register_lazy,
    unregister,
)
from nashzoo.agents.regret_matching import RegretMatching, RegretMatchingConfig
from nashzoo.agents.xfp import XFP, XFPConfig

# Neural and RL learners need optional extras (torch; Stable-Baselines3): registered lazily, their
# modules are imported on first use and a missing extra is named in the error.
register_lazy("nfsp", "nashzoo.agents.nfsp", "neural")
register_lazy("deep_cfr", "nashzoo.agents.deep_cfr", "neural")
register_lazy("ppo", "nashzoo.agents.sb3_baseline", "rl")
register_lazy("dqn", "nashzoo.agents.sb3_baseline", "rl")
register_lazy("mmd_ppo", "nashzoo.agents.mmd_ppo", "rl")

__all__ = [
    "CFR",
    "DCFR",
    "XFP",
    "BatchPolicy",
    "CFRConfig",
    "CFRPlus",
    "CFRPlusConfig",
    "CheckpointError",
    "DCFRConfig",
    "ESMCCFRConfig",
    "ExternalSamplingMCCFR",
    "FixedLearner",
    "Infoset",
    "Learner",
    "LearnerConfig",
    "OSMCCFRConfig",
    "OutcomeSamplingMCCFR",
    "Policy",
    "PolicyError",
    "RegretMatching",
    "RegretMatchingConfig",
    "TabularPolicy",
    "UniformLearner",
    "UniformPolicy",
    "XFPConfig",
    "fixed_policy",
    "import_plugins",
    "learner_class",
    "learner_names",
    "learning_learner_names",
    "load_learner",
    "load_policy_file",
    "make_learner",
    "register",
    "register_lazy",
    "uniform_policy",
    "unregister",
]
