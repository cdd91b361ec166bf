"""Monte Carlo CFR: outcome sampling (``os_mccfr``) and external sampling (``es_mccfr``).

Lanctot, Waugh, Zinkevich & Bowling (2009), "Monte Carlo Sampling for Regret Minimization in
Extensive Games", NeurIPS 22. Both learners replace CFR's full-width tree walk (Zinkevich et al.
2007) by sampled walks whose *sampled counterfactual regrets* are unbiased estimates of the true
ones, so CFR's convergence guarantee holds in expectation at a fraction of the work per iteration.
Both weight their steps linearly by default: Brown & Sandholm (2019), "Solving
Imperfect-Information Games via Discounted Regret Minimization", AAAI, whose Linear CFR (unlike
CFR+) is compatible with sampling; ``weighting="uniform"`` is the 2009 paper's algorithm.

Defaults and the paper. The defaults are what reaches a given NashConv soonest in wall time on
Kuhn, Leduc and Liar's dice (BENCHMARKS.md, "MCCFR speed" and "MCCFR defaults"): a large batch
of walks per step, the exact average and linear weights. The 2009 paper's algorithms are
``os_mccfr(trajectories_per_step=1, averaging="stochastic", weighting="uniform")`` and
``es_mccfr(trajectories_per_step=1, averaging="simple", weighting="uniform")``.

Each learner owns ONE seat ``i`` and sees its opponent only as a Policy (turned once per step into
a ``[num_infosets, num_actions]`` table). Two learners on both seats stepped alternately is
standard alternating-update MCCFR self-play; against another algorithm it is cross-play. A step
runs ``B = trajectories_per_step`` independent sampled walks against the same ``sigma``: a
mini-batch of ``B`` MCCFR iterations for this seat (``B = 1`` with the paper's averaging and equal
weights is exactly the paper's algorithm).

Outcome sampling (``os_mccfr``), one step:

1. ``sigma = regret_matching(R)`` on seat ``i``'s information sets.
2. Sample ``B`` root-to-terminal trajectories: chance and the opponent act from their own
   distributions; seat ``i`` from the epsilon-on-policy mixture
   ``(1 - eps) * sigma + eps * uniform`` (``eps = exploration``, 0.6 as in the paper).
3. For a sampled terminal ``z`` and each of seat ``i``'s decisions ``(I, a)`` on it, with
   ``q_i(z)`` the product of seat ``i``'s sampling probabilities along ``z`` and
   ``pi_i(Ia -> z)`` the product of ``sigma`` over seat ``i``'s later decisions, let
   ``w = u_i(z) * pi_i(Ia -> z) / q_i(z)`` (the opponent's and chance's reach cancel against
   their sampling probabilities); the sampled regret of legal action ``b`` is
   ``w * (1[b = a] - sigma(a|I))``.
4. Average strategy, *stochastically-weighted averaging* (what OpenSpiel's solvers do; it and
   the alternatives are discussed in Lanctot's 2013 PhD thesis): at each of seat ``i``'s
   visited histories ``h`` add ``pi_i(h) / q(h) * sigma(I)``, ``q(h)`` being the probability
   that a walk reaches ``h``. Its expectation is ``pi_i(I) * sigma(I)`` times the number of
   histories of ``I`` that the opponent and chance can reach: the reach-weighted CFR average
   whenever that number does not change, with no per-infoset bookkeeping ("optimistic"
   averaging needs a last-visit counter per infoset and is biased). ``averaging="exact"``
   adds ``pi_i(I) * sigma(I)`` at *every* information set of the seat instead, computed exactly
   from ``sigma`` (seat ``i``'s own reach does not depend on the opponent or chance): the
   expectation without the variance, at ``O(own infosets)`` per step. It is the default: the
   stochastic average's weight of ``I`` changes whenever the opponent's regret matching puts
   probability zero on some of ``I``'s histories, which on Liar's dice left NashConv above 0.4
   after 300 steps per seat with 4096 to 2**20 walks per step (the exact average: below 0.06).
5. Weights as in external sampling's step 4 below (linear by default).

External sampling (``es_mccfr``), one step:

1. ``sigma = regret_matching(R)`` on seat ``i``'s information sets.
2. Regret pass: ``B`` traversals taking EVERY legal action of seat ``i`` and ONE sampled action
   at each chance and opponent node they reach. Values: ``u_i`` at terminals, the sampled
   child's value at sampled nodes, ``sum_a sigma(a|I) v(ha)`` at seat ``i``'s nodes; the
   sampled regret at each visited history of seat ``i`` is ``v(ha) - v(h)`` (no importance
   weights: everything sampled follows its true distribution).
3. Average pass, *simple averaging* as in the paper. There, the traversal for the OTHER player
   adds ``sigma_i(I)`` at every node of seat ``i`` it visits (seat ``i`` and chance sampled,
   the other player's actions all taken). Here seat ``i`` owns its average, so its learner runs
   that walk itself: ``B`` walks sampling seat ``i`` and chance and taking every opponent
   action, adding ``sigma(I)`` per visit. ``I`` is visited at a rate of ``pi_i(I)`` times a
   constant (the chance mass of ``I``), so the result is the reach-weighted CFR average.
   ``averaging="exact"`` (the default) replaces the pass by the exact ``pi_i(I) * sigma(I)``,
   as above: one realization plan per step instead of a second sampled pass, and no variance.
4. Weights, ``weighting="linear"`` (default; Linear CFR, Brown & Sandholm 2019): step ``t``'s
   regrets and average increment count ``t`` times, implemented as multiplying both tables by
   ``t / (t + 1)`` after step ``t`` (regret matching and the normalised average are scale-free).
   The weights are deterministic, so the sampled regrets stay unbiased for the weighted sums.
   Linear is the simplest sampling-compatible choice; BENCHMARKS.md ("MCCFR weighting") has
   the step counts it was chosen on (outcome sampling: BENCHMARKS.md, "MCCFR defaults").
   ``weighting="uniform"`` counts every step once, as in the 2009 paper.

How a batch is computed (on the compiled tree, ``nashzoo.games.compile_tree``; no Python State
objects, no Python loop over nodes or walks). Every update above is a sum over walks of terms
that depend only on which nodes each walk reached, so only the *reach counts* (how many of the
``B`` walks reached each node) matter, and those can be drawn directly with the same
distribution as ``B`` independent walks:

* Outcome sampling: a walk reaches terminal ``z`` with probability ``q(z)``, the product of the
  sampling probabilities on its path, so the terminal counts of ``B`` walks are
  ``Multinomial(B, q)``: one draw. The updates are then sequence-form gathers over the tree's
  terminal sequences, weighted by the counts.
* External sampling, small trees: a walk of a pass is fully described by its *scenario*, the
  action it samples at each sampled node it reaches (Kuhn: 18-24 scenarios per pass). ``B``
  walks fall into the scenarios as ``Multinomial(B, p)``, ``p[s]`` the product of the
  probabilities of scenario ``s``'s choices, and every node's count is a fixed 0/1 matrix
  times the scenario counts: ONE multinomial per pass. Used when a pass has at most
  ``MAX_SCENARIOS`` (4096) scenarios, enumerated once per learner.
* External sampling, bigger trees (Leduc): given that ``m`` walks reach a sampled node, their
  actions there are ``m`` independent draws from its distribution, so its children's counts
  are ``Multinomial(m, p)``; at seat ``i``'s nodes every child gets ``m``. The counts are drawn
  top-down, one vectorised multinomial for all sampled nodes at the same sampled depth (the
  chance moves at the top of the tree, e.g. the deal, merged into one).

  Both give the counts the same distribution (tests check both against the exact regrets and
  visit rates). The regrets are then the counterfactual-value kernel with the
  opponent-and-chance reach replaced by the terminal counts.

So the cost of a step is a fixed handful of numpy calls over tree-sized arrays, whatever ``B``
is; on Kuhn that fixed cost is the whole cost, most of it numpy's per-call overhead (a
``Generator.multinomial`` call with a 2-D ``pvals`` spends far longer on argument checks than a
1-D one, which is why the scenario sampler, with one 1-D call per pass, is used where it fits;
the distribution table is filled in place). Measured costs: BENCHMARKS.md.
``nodes_touched`` reports the nodes the ``B`` walks of the paper's algorithm visit (root and
terminals included): the work of the algorithm, independent of how it is vectorised here.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar, Literal

import numpy as np

from nashzoo.agents.base import Learner, LearnerConfig
from nashzoo.agents.mccfr_sampling import (
    CHANCE_NODE,
    OPPONENT,
    OWN,
    CountSampler,
    ScenarioSampler,
    distribution_table,
    make_sampler,
    node_kinds,
)
from nashzoo.agents.policy import Policy, TabularPolicy
from nashzoo.agents.registry import register
from nashzoo.games import CompiledTree, Game
from nashzoo.games.base import is_finite_number, is_whole_number
from nashzoo.games.treemath import (
    node_paths,
    read_only_view,
    realization_plan,
    regret_matching,
    row_sums,
    sequence_form,
    terminal_spans,
    uniform_strategy,
)
from nashzoo.io import ArraySpec


def _check_batch(value: object, name: str) -> int:
    """The batch size as a plain int (numpy integers too: configs are stored as JSON)."""
    if not is_whole_number(value, 1) or int(value) > _MAX_BATCH:
        raise ValueError(
            f"{name}: trajectories_per_step must be an integer from 1 (the paper's one walk "
            f"per iteration) to 2**62 (the sampler's counts are 64-bit), got {value!r}"
        )
    return int(value)


_MAX_BATCH = 2**62


def _check_averaging(value: object, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(
            f"{name}: averaging must be one of {list(allowed)}, got {value!r} (the "
            "nashzoo.agents.mccfr docstring explains each scheme)"
        )


def _check_weighting(value: object, name: str) -> None:
    if value not in ("linear", "uniform"):
        raise ValueError(
            f"{name}: weighting must be 'linear' (Linear CFR weights, the default) or "
            f"'uniform' (the paper's equal weights), got {value!r}"
        )


@dataclasses.dataclass(frozen=True)
class OSMCCFRConfig(LearnerConfig):
    """Outcome-sampling MCCFR settings.

    Attributes:
        exploration: epsilon of the epsilon-on-policy sampling at the learner's own nodes, which
            sample ``(1 - eps) * sigma + eps * uniform``. 0.6 is the paper's value (and
            OpenSpiel's default). Must be in (0, 1]: with 0, actions that regret matching gives
            probability 0 would never be sampled and could never recover.
        trajectories_per_step: independent trajectories sampled per ``step()``, all against
            the same ``sigma``; 1 is the paper's walk per iteration (to study sampling noise
            per walk). A step costs nearly the same whatever the batch (one multinomial over
            the terminals; see the module docstring), so a larger batch buys lower-variance
            regrets per step for free. The default, 2**20, is where the steps to a given
            NashConv stopped falling on Liar's dice (147,420 terminals: 51 steps per seat to
            NashConv 0.1 with 2**20 walks, 46 with 2**22 or 2**24, 70 with 2**18, 170 with
            2**16, uniform weights); on Kuhn and Leduc it is as fast as 65,536 or faster.
        averaging: ``"exact"`` (the exact ``pi_i(I) * sigma(I)`` at every own information
            set, ``O(infosets)`` per step; the default) or ``"stochastic"``
            (stochastically-weighted averaging at the visited own histories, as in the paper
            and OpenSpiel; biased where the opponent's support changes, module docstring).
        weighting: ``"linear"`` (Linear CFR weights, the default: 27 instead of 51 steps per
            seat to NashConv 0.1 on Liar's dice, 19 instead of 37 to 0.5 on Leduc, 24 instead
            of 77 to 0.02 on Kuhn) or ``"uniform"`` (every step counts once: the paper's
            algorithm). As for external sampling, it changes the weights, never the samples.
    """

    exploration: float = 0.6
    trajectories_per_step: int = 1 << 20
    averaging: Literal["stochastic", "exact"] = "exact"
    weighting: Literal["linear", "uniform"] = "linear"

    def __post_init__(self) -> None:
        eps = self.exploration
        if not (is_finite_number(eps) and 0.0 < eps <= 1.0):
            raise ValueError(
                f"os_mccfr: exploration must be a number in (0, 1] (the paper uses 0.6), "
                f"got {eps!r}"
            )
        object.__setattr__(self, "exploration", float(eps))
        batch = _check_batch(self.trajectories_per_step, "os_mccfr")
        object.__setattr__(self, "trajectories_per_step", batch)
        _check_averaging(self.averaging, "os_mccfr", ("stochastic", "exact"))
        _check_weighting(self.weighting, "os_mccfr")


@dataclasses.dataclass(frozen=True)
class ESMCCFRConfig(LearnerConfig):
    """External-sampling MCCFR settings.

    Attributes:
        trajectories_per_step: independent traversals per ``step()`` (each takes every action
            of the learner's seat and one sampled action elsewhere), all against the same
            ``sigma``; 1 is the paper's walk per iteration (to study sampling noise). A
            step costs nearly the same whatever the batch (see the module docstring), so a
            larger batch buys lower-variance regrets per step; on Kuhn and Leduc the wall time
            to a given NashConv keeps improving up to about a thousand traversals per step,
            hence the default 1024 (with linear weighting, 4096 or 16384 per step saved at
            most a few of the ~30 steps Kuhn needs to NashConv 0.02, within the seed-to-seed
            spread, so the default stays the same for every game; on Liar's dice 4096 needed 27
            steps per seat to NashConv 0.1 instead of 46, at about the same wall time).
        averaging: ``"exact"`` (the exact ``pi_i(I) * sigma(I)`` at every own information set;
            the default) or ``"simple"`` (the paper's simple averaging: ``sigma(I)`` added per
            visit by walks that sample this seat and take every opponent action). Same steps
            to a given NashConv; the exact one replaces a second sampled pass by one
            realization plan, which made the time to NashConv 0.1 on Liar's dice 2.7 s
            instead of 5.1 s and to 0.5 on Leduc 18 ms instead of 29 ms (median wall times
            on the shared development machine).
        weighting: ``"linear"`` (Linear CFR weights, Brown & Sandholm 2019: step ``t``'s
            regrets and average contribution count ``t`` times) or ``"uniform"`` (every step
            counts once: the paper's algorithm). Linear is the default because it reaches a
            given NashConv in about a third of the steps on Kuhn and half on Leduc (module
            docstring); it changes the weights only, never what is sampled.
    """

    trajectories_per_step: int = 1024
    averaging: Literal["simple", "exact"] = "exact"
    weighting: Literal["linear", "uniform"] = "linear"

    def __post_init__(self) -> None:
        batch = _check_batch(self.trajectories_per_step, "es_mccfr")
        object.__setattr__(self, "trajectories_per_step", batch)
        _check_averaging(self.averaging, "es_mccfr", ("simple", "exact"))
        _check_weighting(self.weighting, "es_mccfr")


class _SeatTables:
    """The compiled tree seen from one seat, plus the seat's regret and average tables.

    Built once per learner and shared by both MCCFR learners (composition keeps the Learner
    hierarchy one level deep). Sequence-form conventions as in ``nashzoo.games.treemath``: a
    move ``(I, a)`` is the flat index ``I * num_actions + a``, and index ``num_sequences``
    stands for the empty sequence, whose realization probability is 1.
    """

    def __init__(self, tree: CompiledTree, seat: int) -> None:
        self.tree, self.seat = tree, seat
        n_i, n_a = tree.num_infosets, tree.num_actions
        self.num_infosets, self.num_actions = n_i, n_a
        self.num_sequences = n_i * n_a
        kind = node_kinds(tree, seat)
        infoset = tree.infoset.astype(np.int64)
        self.own_rows = tree.infoset_player == seat
        self.own_mask = np.broadcast_to(self.own_rows[:, None], (n_i, n_a))
        self.legal = tree.legal_mask
        self.uniform = uniform_strategy(tree)

        self._table = distribution_table(tree, kind)

        # Sequence form (the tree-arithmetic kernels the full-width learners use too): last
        # moves before terminals and nodes, each infoset's parent move, the players' own depths.
        self._sf = sf = sequence_form(tree)
        self.term_last_own = sf.last_sequence[seat]
        self.term_last_opp = sf.last_sequence[1 - seat]
        terminals = tree.terminal_nodes.astype(np.int64)
        self.term_chance = tree.terminal_chance_reach
        self.term_utility = np.ascontiguousarray(tree.utility[terminals, seat])
        self.term_length = tree.depth[terminals].astype(np.float64) + 1.0
        chance_reach, node_last = node_paths(tree)
        last_opp = node_last[1 - seat]

        # Own decision nodes: reach ingredients and the terminals below each (a contiguous run
        # of the terminals in depth-first order).
        own_nodes = np.flatnonzero(kind == OWN)
        self.own_node_infoset = infoset[own_nodes]
        self.own_node_last_own = sf.parent_sequence[infoset[own_nodes]]
        self.own_node_last_opp = last_opp[own_nodes]
        self.own_node_chance = chance_reach[own_nodes]
        order, first, after = terminal_spans(tree)
        self.dfs_terminals = order
        self.own_node_first = first[own_nodes]
        self.own_node_after = after[own_nodes]

        # External sampling's samplers, built on first use (outcome sampling never asks).
        self._sampler_inputs = (kind, chance_reach, terminals, own_nodes)

        self.regrets = np.zeros((n_i, n_a))
        self.average = np.zeros((n_i, n_a))
        self._sigma: np.ndarray | None = None
        self._current: TabularPolicy | None = None

    # --- external sampling's samplers ----------------------------------------------------------
    @functools.cached_property
    def regret_pass(self) -> CountSampler | ScenarioSampler:
        """The regret pass's sampler: chance and the opponent sampled, this seat's every
        action taken."""
        kind, chance_reach, terminals, _ = self._sampler_inputs
        return make_sampler(
            self.tree, kind, (OPPONENT, CHANCE_NODE), self._table, chance_reach, terminals
        )

    @functools.cached_property
    def average_pass(self) -> CountSampler | ScenarioSampler:
        """The average pass's sampler: chance and this seat sampled."""
        kind, chance_reach, _, own_nodes = self._sampler_inputs
        return make_sampler(
            self.tree, kind, (OWN, CHANCE_NODE), self._table, chance_reach, own_nodes
        )

    # --- strategies --------------------------------------------------------------------------
    def sigma(self) -> np.ndarray:
        """Regret matching of the regrets, cached until they change. The opponent's rows hold
        zero regrets, so they come out uniform: this is also the current policy's table."""
        if self._sigma is None:
            self._sigma = regret_matching(self.regrets, self.legal)
        return self._sigma

    def changed(self) -> None:
        """Drop the caches after the regrets changed."""
        self._sigma = None
        self._current = None

    def current_policy(self, game: Game) -> TabularPolicy:
        if self._current is None:
            self._current = TabularPolicy(game, self.sigma(), validate=False)
        return self._current

    def average_probs(self) -> np.ndarray:
        """The normalised average on the seat's rows (uniform where never updated)."""
        total = self.average.sum(axis=1, keepdims=True)
        use = self.own_mask & (total > 0.0)
        return np.where(use, self.average / np.where(total > 0.0, total, 1.0), self.uniform)

    def distributions(self, sigma: np.ndarray, opponent: np.ndarray) -> np.ndarray:
        """The distribution at any node: ``sigma`` on this seat's rows, ``opponent`` (rows
        normalised, so that a policy whose rows sum to 1 only within tolerance is accepted) on
        the others', then the chance rows. Written in place into one buffer, valid until the
        next call."""
        rows = self._table.strategies()  # a view made here, never kept (its docstring: why)
        np.divide(opponent, row_sums(opponent)[:, None], out=rows)
        np.copyto(rows, sigma, where=self.own_mask)
        return self._table.flat

    def plan(self, table: np.ndarray, opponent: bool = False) -> np.ndarray:
        """Realization plan of this seat's (or the opponent's) rows of ``table`` as a flat
        ``[num_sequences + 1]`` vector ending in the empty sequence's 1."""
        return self._sf.plan(1 - self.seat if opponent else self.seat, table.reshape(-1))

    def backed_up_values(self, terminal_weight: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        """``q[I, a] = sum_z terminal_weight[z] * pi_i(Ia -> z)`` over the terminals below each
        own move (zero elsewhere), by the shared sequence-form backup."""
        q = self._sf.backup(self.seat, terminal_weight, sigma.reshape(-1))
        return q[:-1].reshape(self.num_infosets, self.num_actions)

    def add_regrets(self, q: np.ndarray, sigma: np.ndarray) -> None:
        """``regret[I, b] += q[I, b] - sum_a sigma(a|I) q[I, a]`` on legal actions."""
        self.regrets += (q - row_sums(q * sigma)[:, None]) * self.legal

    def add_average(self, weights: np.ndarray, sigma: np.ndarray) -> None:
        """``average[I] += weights[I] * sigma[I]``; ``weights`` is zero off the own rows."""
        self.average += weights[:, None] * sigma

    def add_exact_average(self, sigma: np.ndarray) -> None:
        """``average += pi_i(I) * sigma(I)``: this seat's realization plan of ``sigma``."""
        self.average += realization_plan(self.tree, sigma, self.seat)

    def discount(self, t: int) -> None:
        """Linear CFR weights: after step ``t`` (1-based) both tables are multiplied by
        ``t / (t + 1)``, so step ``t`` ends up weighted ``t`` relative to step 1 (regret
        matching and the normalised average are scale-free; the tables stay bounded)."""
        factor = t / (t + 1.0)
        self.regrets *= factor
        self.average *= factor

    # --- checkpoints -------------------------------------------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        return {"regrets": read_only_view(self.regrets), "average": read_only_view(self.average)}

    def array_specs(self) -> dict[str, ArraySpec]:
        """What stored tables must be: finite, zero off this seat's legal moves, and a
        non-negative average."""
        support = self.own_rows[:, None] & (self.legal > 0)
        return {
            "regrets": ArraySpec(self.regrets.shape, support=support),
            "average": ArraySpec(self.average.shape, nonnegative=True, support=support),
        }

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        """Take tables checked against :meth:`array_specs`."""
        self.regrets = arrays["regrets"]
        self.average = arrays["average"]
        self.changed()


class _MCCFRLearner(Learner):
    """What both MCCFR learners share (not registered itself): this seat's tables, the policies
    read from them and the checkpoint plumbing; each subclass adds its sampling ``_step``."""

    kind: ClassVar[str] = "sampling"
    _tables: _SeatTables

    def _setup(self) -> None:
        self._tables = _SeatTables(self.tree, self.seat)

    def current_policy(self) -> TabularPolicy:
        """Regret matching of the regrets on this seat's rows, uniform on the opponent's.

        The returned policy is immutable and cached until the next ``step``.
        """
        return self._tables.current_policy(self.game)

    def average_policy(self) -> TabularPolicy:
        """The normalised average strategy on this seat's rows (a copy), uniform elsewhere."""
        return TabularPolicy.adopt(self.game, self.tree, self._tables.average_probs())

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return self._tables.arrays()

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self._tables.load(self.checked_state_arrays(arrays, self._tables.array_specs()))


@register
class OutcomeSamplingMCCFR(_MCCFRLearner):
    """Outcome-sampling MCCFR for one seat (algorithm in the module docstring)."""

    name: ClassVar[str] = "os_mccfr"
    Config: ClassVar[type[LearnerConfig]] = OSMCCFRConfig
    config: OSMCCFRConfig

    def _step(self, opponent: Policy) -> dict[str, Any]:
        tables = self._tables
        opp = self.opponent_strategy(opponent)
        sigma = tables.sigma()
        eps = float(self.config.exploration)
        explore = (1.0 - eps) * sigma + eps * tables.uniform
        batch = int(self.config.trajectories_per_step)

        # 1. Terminal counts of B walks: Multinomial(B, q), q(z) = product of sampling probs.
        own_sampling = tables.plan(explore)  # q_i of every own sequence
        opp_reach = tables.plan(opp, opponent=True)
        q_own = own_sampling[tables.term_last_own]
        q = q_own * opp_reach[tables.term_last_opp] * tables.term_chance
        counts = self.rng.multinomial(batch, q / q.sum())

        # 2. Sampled regrets. Summed over the walks, the regret of b at I is
        #    q(I, b) - sum_a sigma(a|I) q(I, a), with q the counterfactual values of the terminal
        #    weights count(z) u(z) / q_i(z).
        # A terminal whose sampling probability underflowed to 0 (a tiny exploration on a long
        # path) is never drawn: its weight is 0, not 0 / 0.
        weight = counts * tables.term_utility / np.where(q_own > 0.0, q_own, 1.0)
        tables.add_regrets(tables.backed_up_values(weight, sigma), sigma)

        # 3. Average strategy.
        if self.config.averaging == "stochastic":
            # Visits of each own node (its terminals are one run of the depth-first order),
            # weighted by pi_i(h) / q(h).
            below = np.concatenate(([0.0], np.cumsum(counts[tables.dfs_terminals])))
            visits = below[tables.own_node_after] - below[tables.own_node_first]
            own_reach = tables.plan(sigma)[tables.own_node_last_own]
            reach_q = (
                own_sampling[tables.own_node_last_own]
                * opp_reach[tables.own_node_last_opp]
                * tables.own_node_chance
            )
            ratio = visits * own_reach / np.where(reach_q > 0.0, reach_q, 1.0)
            weights = np.bincount(
                tables.own_node_infoset, weights=ratio, minlength=tables.num_infosets
            )
            tables.add_average(weights, sigma)
        else:
            tables.add_exact_average(sigma)
        if self.config.weighting == "linear":
            tables.discount(self.iterations + 1)
        tables.changed()
        touched = int((counts * tables.term_length).sum())
        return {"nodes_touched": touched, "trajectories": batch}


@register
class ExternalSamplingMCCFR(_MCCFRLearner):
    """External-sampling MCCFR for one seat (algorithm in the module docstring)."""

    name: ClassVar[str] = "es_mccfr"
    Config: ClassVar[type[LearnerConfig]] = ESMCCFRConfig
    config: ESMCCFRConfig

    def _step(self, opponent: Policy) -> dict[str, Any]:
        tables = self._tables
        config = self.config
        sigma = tables.sigma()
        probs = tables.distributions(sigma, self.opponent_strategy(opponent))
        batch = config.trajectories_per_step

        # 1. Regret pass: reach counts of B traversals, then the sampled counterfactual values
        #    q(I, a) = sum_z count(z) u(z) pi_i(Ia -> z) and regrets q(I, a) - sum_b sigma q(I, b).
        reached, touched = tables.regret_pass.sample(probs, batch, self.rng)
        weight = reached * tables.term_utility
        tables.add_regrets(tables.backed_up_values(weight, sigma), sigma)

        # 2. Average pass.
        if config.averaging == "simple":
            reached, more = tables.average_pass.sample(probs, batch, self.rng)
            touched += more
            visits = np.bincount(
                tables.own_node_infoset, weights=reached, minlength=tables.num_infosets
            )
            tables.add_average(visits, sigma)
        else:
            tables.add_exact_average(sigma)

        # 3. Weights (linear: this step counts self.iterations + 1 times as much as the first).
        if config.weighting == "linear":
            tables.discount(self.iterations + 1)
        tables.changed()
        return {"nodes_touched": touched, "trajectories": batch}
