"""Policies, agents and learners behind one interface.

Importing this package registers every tabular learner; neural and RL learners are registered
lazily so that torch and Stable-Baselines3 stay optional.
"""

from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig
from nashzoo.agents.fixed import FixedLearner, UniformLearner, fixed_policy, uniform_policy
from nashzoo.agents.policy import Infoset, Policy, PolicyError, TabularPolicy
from nashzoo.agents.registry import (
    learner_class,
    learner_names,
    load_learner,
    make_learner,
    register,
    register_lazy,
)

__all__ = [
    "CheckpointError",
    "FixedLearner",
    "Infoset",
    "Learner",
    "LearnerConfig",
    "Policy",
    "PolicyError",
    "TabularPolicy",
    "UniformLearner",
    "fixed_policy",
    "learner_class",
    "learner_names",
    "load_learner",
    "make_learner",
    "register",
    "register_lazy",
    "uniform_policy",
]
