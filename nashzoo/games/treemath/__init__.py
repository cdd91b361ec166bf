"""Tree arithmetic over a :class:`~nashzoo.games.tree.CompiledTree`: the one home of every
kernel the learners, the evaluator and the LP share.

A *strategy* here is a ``[num_infosets, num_actions]`` float array of action probabilities for
every information set of every player (zeros on illegal actions). No kernel makes a Python call
per history. Modules:

* :mod:`.terminal`: per-terminal reach, the reference counterfactual values and the
  terminals below every node (:func:`terminal_spans`);
* :mod:`.response`: exact best responses, expected returns and NashConv;
* :mod:`.sequence`: the sequence form (realization plans, the fused counterfactual pass of the
  full-width learners, the bottom-up value backup of the sampling ones);
* :mod:`.matching`: regret matching (the ONE implementation), row sums and normalisations;
* :mod:`.fullwidth`: one full-width CFR-family iteration of a seat (pass, discounted regret and
  average updates, regret matching) as one fused kernel;
* :mod:`.scratch`: the scratch rows the compiled kernels over one tree share;
* :mod:`.walks`: batched sampled walks (Deep CFR's traversals) and inverse-CDF sampling;
* :mod:`.children`: the children of any nodes and the chance nodes' outcome rows, with no
  dense ``[N, B]`` table.

Notation: for a terminal ``z``, ``pi_p(z)`` is the product of player ``p``'s action probabilities on
the path to ``z``, ``pi_c(z)`` the chance probability, ``u_p(z)`` the payoff.
"""

from nashzoo.games.treemath._cache import per_tree, read_only_view
from nashzoo.games.treemath.children import ChanceRows, chance_rows, child_ranges
from nashzoo.games.treemath.fullwidth import FullWidthStep, IterationWeights
from nashzoo.games.treemath.matching import (
    RegretMatcher,
    behaviour_strategy,
    distribution_status,
    regret_matching,
    row_sums,
    uniform_strategy,
)
from nashzoo.games.treemath.reach import reaches_player
from nashzoo.games.treemath.response import (
    best_response,
    expected_returns,
    nash_conv,
    nash_conv_value,
)
from nashzoo.games.treemath.sequence import (
    CounterfactualPass,
    OwnDepth,
    SequenceForm,
    counterfactual_pass,
    node_paths,
    realization_plan,
    sequence_form,
)
from nashzoo.games.treemath.terminal import counterfactual_values, terminal_reach, terminal_spans
from nashzoo.games.treemath.walks import (
    SampledWalks,
    WalkDepth,
    sample_cdf,
    sample_rows,
    sampled_walks,
)

__all__ = [
    "ChanceRows",
    "CounterfactualPass",
    "FullWidthStep",
    "IterationWeights",
    "OwnDepth",
    "RegretMatcher",
    "SampledWalks",
    "SequenceForm",
    "WalkDepth",
    "behaviour_strategy",
    "best_response",
    "chance_rows",
    "child_ranges",
    "counterfactual_pass",
    "counterfactual_values",
    "distribution_status",
    "expected_returns",
    "nash_conv",
    "nash_conv_value",
    "node_paths",
    "per_tree",
    "reaches_player",
    "read_only_view",
    "realization_plan",
    "regret_matching",
    "row_sums",
    "sample_cdf",
    "sample_rows",
    "sampled_walks",
    "sequence_form",
    "terminal_reach",
    "terminal_spans",
    "uniform_strategy",
]
