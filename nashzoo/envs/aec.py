"""One generic PettingZoo ``AECEnv`` over any nashzoo :class:`~nashzoo.games.Game`.

The environment holds no rules. Everything it knows comes from the game, in one of two modes
(``tabulate=`` of :class:`GameAECEnv`):

* **tables** (``tabulate=True``, :mod:`nashzoo.envs.tables`): the game tree (who moves, which
  actions are legal, where each action leads, chance probabilities, payoffs) gathered in bulk
  from the arrays of :func:`nashzoo.games.compile_tree`, and what each player sees at each node
  (``State.infoset_key(player)`` and ``State.infoset_tensor(player)``), read from the ``State``
  once per node when the env tables for a game are first built (cached per ``game.id``; the
  States are made one depth at a time, so only two levels of them are alive). Stepping then
  only follows integer node indices through pre-built Python lists (no ``State`` is built
  during play);
* **states** (``tabulate=False``, :mod:`nashzoo.envs.lazy`): the env steps the game's
  ``State`` objects, asking them for keys, tensors, masks and returns as the game goes, and
  remembers the histories reached (at most :data:`~nashzoo.envs.lazy.MEMO_MAX_NODES`, then it
  starts again), so the openings every episode replays cost about what the tables cost. Nothing
  is enumerated: this plays games far too big to tabulate.

``tabulate="auto"`` (the default) decides by cost. The tables cost, up front, the compile plus
one ``State`` per history for the views (Liar's dice, 294,883 histories, on a shared 2-core
machine: 0.05 s of vectorised compile, then about 2 s of views) and about 500 bytes per history
held; the states cost nothing up front and, once their memo holds the histories play keeps
reaching, step within about 5% of the tables, paying only for histories reached the first time
(``benchmarks/bench_env.py``: over its 70,000 random Liar's dice games, which keep reaching new
histories, the states ran 5-25% slower than the tables on a shared machine). So ``"auto"``
uses the tables when the game has at most :data:`~nashzoo.envs.lazy.TABULATE_MAX_HISTORIES`
histories (100,000: a fraction of a second to build) and the states otherwise, which never
compiles the tree. The size comes from
``Game.num_histories()`` when the game declares it (Liar's dice does, by formula); otherwise
the env counts the tree lazily, walking at most that many histories, once per game.
Simultaneous-move games (``parallelizable=True``) always use the tables (see the masks below).

Both modes show the same thing: ``tests/test_env_parity.py`` walks every history of every game
through the env in each mode and through ``State.child`` and asserts identical infoset keys,
tensors, masks (the rule below), agents to move, returns and, for one seed, the same sampled
chance outcomes.

Text for people comes from ``State.describe(player)``.

Conventions (those of PettingZoo's classic environments):

* agents are ``"player_0"``, ``"player_1"``, ...; integer players exist only inside the package;
* action space ``Discrete(n)`` and observation space
  ``Dict({"observation": Box(0, 1, (infoset_tensor_size,), float32),
  "action_mask": Box(0, 1, (n,), int8)})`` with ``n = game.num_actions_of(player)``: that is
  ``game.num_actions`` for every agent except in a non-square matrix game, where the row and
  column players have their own counts (so even an unmasked ``action_space(agent).sample()``
  is an id the agent can use); ``pad_actions=True`` gives every agent ``game.num_actions``
  instead, the extra ids always masked out (identical spaces, for libraries that need them).
  ``observation`` is the agent's information state tensor; ``action_mask`` is the agent's
  legal actions when it is to move and zeros for every agent that is not (so zeros while the
  other player is to move in poker, and for everyone at the end), in both modes. The one
  exception is a simultaneous-move env (``parallelizable=True``: ``rps_v0``,
  ``matrix_game_v0``), whose parallel view asks every agent for an action at once: there an
  agent sees the legal actions of its information set whenever that is an information set it
  acts at, so the second mover of a matrix game, who cannot tell whether the first has moved,
  sees its actions from the start (this needs the tables, which is why simultaneous-move
  games always use them). A turn-based game whose player cannot tell whether it is to move
  (OpenSpiel's ``dark_hex``: after a move onto a hidden stone the same player moves again)
  shows the waiting player zeros, as the states mode always did;
* ``infos[agent]["infoset_key"]`` is ``State.infoset_key(player)`` (keys are unique among one
  player's information sets; the tensor also encodes the player);
* rewards arrive only when the game ends (the game's returns, zero-sum for the poker games),
  then every agent is terminated and must be stepped with ``None`` to leave;
* a game that chance ends before any player moves (a "misdeal" outcome) is no episode:
  PettingZoo's agents are live after ``reset()`` (``api_test`` asserts that no agent is
  terminated there), so ``reset()`` draws again, counting such games in ``zero_move_games``
  and their returns in ``zero_move_returns`` (sums since the env was made; those of the last
  ``reset()`` one by one in ``last_zero_move_returns``). The average game
  return is then ``(sum of episode rewards + zero_move_returns) / (episodes +
  zero_move_games)``, which is ``nashzoo.eval.expected_returns``; the episodes alone average
  the return given that someone moves. Forced chance outcomes that end the game at once are
  refused (a redraw would not be the forced deal);
* chance outcomes are drawn from the env's own ``np.random.Generator``, seeded by
  ``reset(seed=...)`` (no global RNG); ``reset(options={"chance_outcomes": [...]})`` forces the
  next chance outcomes (e.g. a fixed deal for duplicate matches or tests), refused at reset
  when no play can use them all (:mod:`nashzoo.envs.forced`);
* an illegal action raises :class:`~nashzoo.games.IllegalActionError` (a ``ValueError`` naming
  the legal actions) and leaves the env exactly as it was, so the caller can retry. The public
  ``env(illegal_action="penalize")`` instead follows PettingZoo's terminate-with-penalty
  convention (:class:`PenalizeIllegalWrapper`, see :func:`wrap_env`).
"""

from __future__ import annotations

import warnings
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, NoReturn, overload

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from nashzoo.envs.forced import SEARCH_MAX_NODES, TreeWalk, check_forced, not_possible_here
from nashzoo.envs.lazy import TABULATE_MAX_HISTORIES, Node, NodeMemo, small_enough
from nashzoo.envs.tables import EnvTables, env_tables
from nashzoo.games import CHANCE, Game, IllegalActionError, State, load_game
from nashzoo.games.base import GameTooLarge, action_index, checked_seed, legal_actions_text
from nashzoo.games.tree import readonly

ObsDict = dict[str, np.ndarray]
RENDER_MODES = ("ansi", "human")


def render_mode_error(render_mode: Any, modes: Any) -> ValueError:
    """The error for an unsupported ``render_mode``; for ``'rgb_array'``, which
    Stable-Baselines3's ``make_vec_env`` asks for unless told otherwise, it names that fix."""
    hint = ""
    if render_mode == "rgb_array":
        hint = (
            " (nashzoo's envs render text; Stable-Baselines3's make_vec_env asks for "
            "'rgb_array' unless given env_kwargs={'render_mode': None})"
        )
    return ValueError(
        f"render_mode must be None or one of {list(modes)}, got {render_mode!r}{hint}"
    )


def _no_memo(*args: Any) -> NoReturn:
    """What the tables mode has where the states mode reaches into its memo of states."""
    raise RuntimeError("a tabulated env steps its tables: it has no memo of states")


_UNIFORM_BATCH = 512
ZERO_MOVE_MAX_DRAWS = 100_000
"""Games a ``reset()`` draws, each ended by chance before any player moved, before it gives up:
such games may be most of the draws (a valid game), not all of them."""


def agent_name(player: int) -> str:
    """PettingZoo agent name of integer ``player``."""
    return f"player_{player}"


def _use_tables(game: Game, tabulate: bool | str, parallelizable: bool) -> bool:
    if tabulate == "auto":
        return parallelizable or small_enough(game)
    if not isinstance(tabulate, bool):
        raise ValueError(f"tabulate must be 'auto', True or False, got {tabulate!r}")
    if parallelizable and not tabulate:
        raise ValueError(
            "tabulate=False cannot serve a parallelizable (simultaneous-move) env: the second "
            "mover's action mask before its turn comes from the tables; use tabulate=True"
        )
    return tabulate


class GameAECEnv(AECEnv[str, ObsDict, int]):
    """PettingZoo AEC environment playing any nashzoo game (see the module docstring).

    Args:
        game: a :class:`~nashzoo.games.Game`, or a name for :func:`~nashzoo.games.load_game`.
        name: versioned environment name for ``metadata["name"]`` (default: ``game.name``).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the text) or ``"human"``
            (the text is printed after every ``reset()`` and every move, as PettingZoo's
            classic environments do; ``render()`` prints it again and returns ``None``).
        render_agent: whose view ``render()`` shows (``"player_0"``, ...); ``None`` shows every
            card, like a spectator.
        parallelizable: set ``metadata["is_parallelizable"]``: true only for games whose every
            player moves once per cycle without seeing the others' moves (matrix games).
        tabulate: ``"auto"`` (default), ``True`` (step through lookup tables of the whole
            tree, built once per game) or ``False`` (step the game's ``State`` objects; nothing
            is enumerated). See the module docstring; ``tabulated`` tells which was chosen.
        pad_actions: give every agent the same spaces, ``Discrete(game.num_actions)`` and an
            action mask of that length, where the seats' action counts differ (a non-square
            matrix game): the extra ids are always masked out and illegal. Multi-agent
            libraries that stack agents (Tianshou, SuperSuit's vector envs) need identical
            spaces. Games whose seats already agree are unchanged.
        **game_params: parameters for ``load_game`` when ``game`` is a name.

    Raises:
        ValueError: unknown game, bad game parameters, a bad ``render_mode``/``render_agent``
            or ``tabulate``.
    """

    def __init__(
        self,
        game: Game | str,
        *,
        name: str | None = None,
        render_mode: str | None = None,
        render_agent: str | None = None,
        parallelizable: bool = False,
        tabulate: bool | str = "auto",
        pad_actions: bool = False,
        **game_params: Any,
    ) -> None:
        super().__init__()
        self.game: Game = load_game(game, **game_params)
        self.possible_agents = [agent_name(p) for p in range(self.game.num_players)]
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise render_mode_error(render_mode, RENDER_MODES)
        if render_agent is not None and render_agent not in self.possible_agents:
            raise ValueError(
                f"render_agent must be None or one of {self.possible_agents}, got {render_agent!r}"
            )
        self.render_mode = render_mode
        self.render_agent = render_agent
        self.metadata = {
            "name": name or self.game.name,
            "render_modes": list(RENDER_MODES),
            "is_parallelizable": bool(parallelizable),
            "render_fps": 1,
        }
        self.tabulated = _use_tables(self.game, tabulate, parallelizable)
        try:
            self._tables = env_tables(self.game) if self.tabulated else None
        except GameTooLarge as err:
            if parallelizable:
                raise
            raise GameTooLarge(
                f"{err.args[0].split(';')[0]}; tabulate=True asks for the whole tree: leave "
                "tabulate at 'auto' (or False) and the env steps the game's states instead"
            ) from None
        # The states mode: the memo of nodes reached, and the current one.
        memo = self._memo = None if self.tabulated else NodeMemo(self.game)
        # Its ways in, bound once: what a step calls when a node's kids or views miss (none in
        # the tables mode, whose steps never ask).
        self._memo_child: Callable[[Node, int], Node] = _no_memo
        self._memo_view: Callable[[Node, int, int], tuple[np.ndarray, np.ndarray]] = _no_memo
        if memo is not None:
            self._memo_child, self._memo_view = memo.child, memo.view
        self._cur: Node | None = None
        self._agent_index = {a: p for p, a in enumerate(self.possible_agents)}
        self._seats = tuple(enumerate(self.possible_agents))
        self.pad_actions = bool(pad_actions)
        tables = self._tables
        self._view_mask: list[np.ndarray] = (
            []  # the states mode keeps its masks in the memo
            if tables is None
            else (tables.view_mask_padded if pad_actions else tables.view_mask)
        )
        sizes = [
            self.game.num_actions if pad_actions else self.game.num_actions_of(p)
            for p in range(self.game.num_players)
        ]
        # Whose mask shows actions when not to move (module docstring): in a simultaneous-move
        # env, an agent whose information set is one it acts at; elsewhere nobody's.
        self._masks_before_turn = bool(parallelizable)
        self._zero_masks = [readonly(np.zeros(n, dtype=np.int8)) for n in sizes]
        self._observation_spaces = {
            a: self._make_observation_space(sizes[p]) for p, a in enumerate(self.possible_agents)
        }
        self._action_spaces = {
            a: spaces.Discrete(sizes[p]) for p, a in enumerate(self.possible_agents)
        }
        self._rng: np.random.Generator | None = None
        self._uniforms: list[float] = []
        self._uniform_pos = 0
        self._forced: list[int] = []
        self._forced_pos = 0
        self._forced_known = True  # whether reset() could check the forced outcomes as a whole
        # Games reset() drew that chance ended before any player moved, since the env was made
        # (no episode: drawn again; module docstring), and each agent's returns summed over them.
        self.zero_move_games = 0
        self.zero_move_returns = dict.fromkeys(self.possible_agents, 0.0)
        # Those the last reset() drew, each game's returns by seat (a match count needs them one
        # by one: nashzoo.eval.tournament).
        self.last_zero_move_returns: list[tuple[float, ...]] = []
        self._root_can_move = False  # known once the first reset() without forced outcomes checks
        self._node = -1

    def _make_observation_space(self, num_actions: int) -> spaces.Dict:
        size = self.game.infoset_tensor_size
        if size <= 0:
            raise ValueError(
                f"{self.game.display_id} defines no information-set tensors, so its env has no "
                "observation to give an agent; pick a game with tensors (in OpenSpiel, "
                "provides_information_state_tensor, or a perfect-information game with "
                "observation tensors), or use the game's States and compile_tree directly"
            )
        return spaces.Dict(
            {
                "observation": spaces.Box(*self.game.infoset_tensor_bounds, (size,), np.float32),
                "action_mask": spaces.Box(0, 1, (num_actions,), dtype=np.int8),
            }
        )

    # --- spaces --------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Dict:
        space = self._observation_spaces.get(agent)
        if space is None:
            raise self._unknown_agent(agent)
        return space

    def action_space(self, agent: str) -> spaces.Discrete:
        space = self._action_spaces.get(agent)
        if space is None:
            raise self._unknown_agent(agent)
        return space

    # --- randomness ----------------------------------------------------------------------
    @property
    def np_random(self) -> np.random.Generator:
        """The generator chance outcomes are drawn from (created on the first ``reset``)."""
        if self._rng is None:
            self._rng = np.random.default_rng()
        return self._rng

    def _uniform(self) -> float:
        # Uniforms are drawn from the generator in batches: one numpy call per 512 chance events
        # instead of one each. Same seed, same sequence.
        pos = self._uniform_pos
        if pos >= len(self._uniforms):
            self._uniforms = self.np_random.random(_UNIFORM_BATCH).tolist()
            pos = 0
        self._uniform_pos = pos + 1
        return self._uniforms[pos]

    def _follow_forced(
        self, t: EnvTables, node: int, forced: list[int], pos: int
    ) -> tuple[int, int]:
        """Apply forced chance outcomes ``forced[pos:]`` from ``node`` while at chance nodes
        (``t``: this env's tables).

        Pure: returns ``(node, pos)`` and changes nothing, so an impossible outcome raises
        before the env is touched (a ValueError, not an IllegalActionError: the move that led
        here is legal; see :mod:`nashzoo.envs.forced`).
        """
        while pos < len(forced) and t.player[node] == CHANCE:
            outcomes = t.chance_outcomes[node]
            if forced[pos] not in outcomes:
                raise ValueError(not_possible_here(forced[pos], pos, t.history(node), outcomes))
            node = t.chance_children[node][outcomes.index(forced[pos])]
            pos += 1
        return node, pos

    def _sample_chance(self, t: EnvTables, node: int) -> int:
        """Draw chance outcomes from ``node`` until a decision or terminal node (``t``: this
        env's tables)."""
        while t.player[node] == CHANCE:
            cdf = t.chance_cdf[node]
            i = bisect_right(cdf, self._uniform())
            node = t.chance_children[node][min(i, len(cdf) - 1)]
        return node

    def _follow_forced_node(self, node: Node, forced: list[int], pos: int) -> tuple[Node, int]:
        """:meth:`_follow_forced` for the states mode."""
        while pos < len(forced) and node.player == CHANCE:
            if forced[pos] not in node.outcomes:
                history = node.state.history()
                raise ValueError(not_possible_here(forced[pos], pos, history, node.outcomes))
            node = self._memo_child(node, forced[pos])
            pos += 1
        return node, pos

    def _states_memo(self) -> NodeMemo:
        """The states mode's memo (never asked for in the tables mode)."""
        memo = self._memo
        if memo is None:
            _no_memo()
        return memo

    def _tree_walk(self) -> TreeWalk[Any]:
        """How :func:`~nashzoo.envs.forced.check_forced` reads this env's tree."""
        t = self._tables
        if t is None:
            return TreeWalk(
                player=lambda n: n.player,
                outcomes=lambda n: n.outcomes,
                child=self._memo_child,
                legal=lambda n: n.legal,
                history=lambda n: n.state.history(),
            )

        def child(node: int, a: int) -> int:
            if t.player[node] == CHANCE:
                return t.chance_children[node][t.chance_outcomes[node].index(a)]
            return t.children[node][a]

        return TreeWalk(
            t.player.__getitem__,
            t.chance_outcomes.__getitem__,
            child,
            t.legal.__getitem__,
            t.history,
        )

    def _forced_option(self, options: dict[str, Any] | None) -> tuple[list[int], bool]:
        """``options["chance_outcomes"]`` as a list of ints, checked as a whole
        (:func:`~nashzoo.envs.forced.check_forced`): a ValueError when no play can use them;
        also whether that could be checked (the states mode's search is bounded)."""
        given = options.get("chance_outcomes", ()) if options else ()
        try:
            indices = [action_index(o) for o in given]
        except TypeError:
            indices = [None]
        forced = [a for a in indices if a is not None]
        if len(forced) < len(indices):
            raise ValueError(
                f"options['chance_outcomes'] must be a sequence of integers, got {given!r}"
            )
        if not forced:
            return forced, True
        memo = self._memo
        root: int | Node = 0 if memo is None else memo.root
        budget = None if memo is None else SEARCH_MAX_NODES
        return forced, check_forced(self._tree_walk(), root, forced, self.game.display_id, budget)

    def _sample_chance_node(self, node: Node) -> Node:
        """:meth:`_sample_chance` for the states mode (the same draw for the same uniform)."""
        while node.player == CHANCE:
            i = bisect_right(node.cdf, self._uniform())
            outcome = node.outcomes[min(i, len(node.cdf) - 1)]
            node = node.kids.get(outcome) or self._memo_child(node, outcome)
        return node

    # --- AEC API -------------------------------------------------------------------------
    def reset(
        self,
        seed: int | np.random.Generator | np.random.SeedSequence | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Start a new game.

        Args:
            seed: reseeds the env's generator (``None`` keeps drawing from the current one); a
                ``np.random.Generator`` is drawn from as it is (nashzoo's learners hand theirs).
            options: ``{"chance_outcomes": [...]}`` forces the next chance outcomes in order
                (cards are dealt player 0 first, then player 1, then the public card); once
                they run out, outcomes are drawn at random again. Other keys are ignored
                (PettingZoo's ``api_test`` passes arbitrary ones).

        Raises:
            ValueError: no play can use every forced chance outcome (one is not possible where
                it would be drawn, or there are more than the game's chance nodes); nothing
                changed. See :mod:`nashzoo.envs.forced`.
        """
        if seed is not None and not isinstance(seed, (np.random.Generator, np.random.SeedSequence)):
            seed = checked_seed(seed)  # a number; nashzoo's own learners may hand a generator
        forced, known, node, pos = self._forced_start(options)  # raises before any change
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
            self._uniforms = []
            self._uniform_pos = 0
        first = self._first_decision(node)
        self._forced, self._forced_pos, self._forced_known = forced, pos, known
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._skip_agent_selection: str | None = None
        tables = self._tables
        if tables is not None:
            self._enter(tables, first, self.agents[0])
        else:
            self._enter_node(first, self.agents[0])
        if self.render_mode == "human":
            self.render()

    def _forced_start(self, options: dict[str, Any] | None) -> tuple[list[int], bool, Any, int]:
        """The forced outcomes of ``options``, whether they were checked as a whole, and the
        node after those drawn at the start with how many that used. Pure: raises the
        ValueError of a refused ``reset(options=...)`` and changes nothing."""
        memo = self._memo
        if not options and self._root_can_move:  # the common case, kept short: every reset()
            return [], True, 0 if memo is None else memo.root, 0
        forced, known = self._forced_option(options)
        tables = self._tables
        node: int | Node
        if tables is not None:
            node, pos = self._follow_forced(tables, 0, forced, 0)
            who = tables.player[node]
        else:
            node, pos = self._follow_forced_node(self._states_memo().root, forced, 0)
            who = node.player
        self._check_someone_can_move(who, forced)
        if not forced:
            self._root_can_move = True  # checked: the game's start is not a terminal history
        return forced, known, node, pos

    def check_options(self, options: dict[str, Any] | None) -> None:
        """Raise the ValueError ``reset(options=options)`` would raise, changing nothing
        (:class:`~nashzoo.envs.single_agent.SingleAgentEnv` checks before it draws)."""
        self._forced_start(options)

    def _check_someone_can_move(self, who: int, forced: list[int]) -> None:
        """Refuse a start (after the forced outcomes) that is already a terminal history (``who``
        moves there): an episode needs a move (PettingZoo's agents are live after reset), and
        no redraw can change it."""
        if who != CHANCE and who < 0:
            how = f"the forced chance outcomes {forced} end" if forced else "ends"
            raise ValueError(
                f"{self.game.display_id} {how} before any player moves: an env episode needs a "
                "move (PettingZoo's agents are live after reset). Read the payoff from the game "
                "(State.returns), or evaluate or solve it instead"
            )

    def _first_decision(self, node: Any) -> Any:
        """Draw chance outcomes from ``node`` until a decision node (an int in the tables, a
        ``Node`` in the states). A draw that ends the game before any player moves is no
        episode (PettingZoo's agents are live after reset): it is counted in
        :attr:`zero_move_games` and :attr:`zero_move_returns` and drawn again."""
        tables = self._tables
        returns: Sequence[float]
        self.last_zero_move_returns = []
        for _ in range(ZERO_MOVE_MAX_DRAWS):
            if tables is not None:
                end = self._sample_chance(tables, node)
                if tables.player[end] >= 0:
                    return end
                returns = tables.returns[end]
            else:
                end_node = self._sample_chance_node(node)
                if end_node.player >= 0:
                    return end_node
                returns = end_node.returns
            self.zero_move_games += 1
            for p, agent in self._seats:
                self.zero_move_returns[agent] += returns[p]
            self.last_zero_move_returns.append(tuple(float(r) for r in returns))
        raise ValueError(
            f"{self.game.display_id} ended before any player moved in {ZERO_MOVE_MAX_DRAWS:,} "
            "draws of its chance outcomes: an env needs a decision (PettingZoo's agents are "
            "live after reset). Evaluate or solve the game instead"
        )

    def _enter(self, t: EnvTables, node: int, mover: str) -> None:
        """Make ``node`` (a decision or terminal node) of the tables ``t`` current; ``mover``
        acted last."""
        self._node = node
        view = t.view[node]
        keys = t.view_key
        self.infos = {a: {"infoset_key": keys[view[p]]} for p, a in self._seats}
        who = t.player[node]
        if who >= 0:
            self.agent_selection = self.possible_agents[who]
        else:
            self._end(t.returns[node], mover)

    def _enter_node(self, node: Node, mover: str) -> None:
        """:meth:`_enter` for the states mode."""
        self._cur = node
        keys = node.keys
        self.infos = {a: {"infoset_key": keys[p]} for p, a in self._seats}
        if node.player >= 0:
            self.agent_selection = self.possible_agents[node.player]
        else:
            self._end(node.returns, mover)

    def _end(self, returns: Sequence[float], mover: str) -> None:
        """Terminal: pay everyone, terminate everyone; the agent after the mover leaves first."""
        self.rewards = {a: returns[p] for p, a in self._seats}
        self._accumulate_rewards()
        self.terminations = dict.fromkeys(self.agents, True)
        if not self._forced_known and self._forced_pos < len(self._forced):
            warnings.warn(
                f"{len(self._forced) - self._forced_pos} forced chance outcomes were not used: "
                f"this play of {self.game.display_id} reached no chance node for them, and the "
                "game is too big for reset() to check whether any play would",
                stacklevel=2,
            )
        n = len(self.possible_agents)
        self.agent_selection = self.possible_agents[(self._agent_index[mover] + 1) % n]

    def step(self, action: int | None) -> None:
        """Play ``action`` for ``agent_selection`` (``None`` once the agent is terminated).

        Raises:
            IllegalActionError: ``action`` is not legal here; nothing changed, retry.
            RuntimeError: before the first ``reset()``.
        """
        try:
            agent = self.agent_selection
        except AttributeError:  # set by the first reset()
            raise self._not_started("step()") from None
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        a = action if action.__class__ is int else action_index(action)
        if a is None:
            raise IllegalActionError(
                self._illegal_message(action, agent, "is not an integer action id")
            )
        t = self._tables
        if t is None:  # the states mode
            cur = self._cur
            if cur is None:  # agent_selection was set by hand: no reset() made a node current
                raise self._not_started("step()")
            if a not in cur.legal:
                raise IllegalActionError(self._illegal_message(action, agent))
            self._step_node(cur, a, agent)
            return
        kids = t.children[self._node]
        child = kids[a] if 0 <= a < len(kids) else -1
        if child < 0:
            raise IllegalActionError(self._illegal_message(action, agent))
        if t.player[child] == CHANCE:
            child, self._forced_pos = self._follow_forced(t, child, self._forced, self._forced_pos)
            child = self._sample_chance(t, child)
        self._cumulative_rewards[agent] = 0.0
        self._enter(t, child, agent)
        if self.render_mode == "human":
            self.render()

    def _step_node(self, cur: Node, a: int, agent: str) -> None:
        """:meth:`step` for the states mode (``cur`` is the current node, ``a`` a legal action
        id there)."""
        child = cur.kids.get(a) or self._memo_child(cur, a)
        if child.player == CHANCE:
            child, self._forced_pos = self._follow_forced_node(
                child, self._forced, self._forced_pos
            )
            child = self._sample_chance_node(child)
        self._cumulative_rewards[agent] = 0.0
        self._enter_node(child, agent)
        if self.render_mode == "human":
            self.render()

    def is_legal(self, action: int) -> bool:
        """Whether the integer id ``action`` (inside the current agent's action space) is legal
        now; what :class:`~nashzoo.envs.wrappers.PenalizeIllegalWrapper` asks before a move."""
        cur = self._cur
        if cur is not None:  # the states mode
            return action in cur.legal
        t = self._tables
        if t is None or self._node < 0:
            raise self._not_started("is_legal()")
        return t.children[self._node][action] >= 0

    @overload
    def last(self, observe: Literal[True] = True) -> tuple[ObsDict, float, bool, bool, dict]: ...
    @overload
    def last(self, observe: bool) -> tuple[ObsDict | None, float, bool, bool, dict]: ...
    def last(self, observe: bool = True) -> tuple[ObsDict | None, float, bool, bool, dict]:
        """PettingZoo's ``AECEnv.last``, with the "call reset() first" error before a game
        (written out, not a call to it: every step of ``agent_iter`` asks)."""
        try:
            agent = self.agent_selection
        except AttributeError:  # set by the first reset()
            raise self._not_started("last()") from None
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def end_with_penalty(self, agent: str, illegal_reward: float) -> None:
        """End the game because ``agent`` (the one to move) tried an illegal move, as PettingZoo's
        ``TerminateIllegalWrapper`` does: ``agent`` gets ``illegal_reward``, every other agent 0,
        every agent is marked terminated and truncated and must then be stepped with ``None``;
        the game state is left as it was before the move."""
        self._cumulative_rewards[agent] = 0
        self.terminations = dict.fromkeys(self.agents, True)
        self.truncations = dict.fromkeys(self.agents, True)
        self.rewards = dict.fromkeys(self.truncations, 0)
        self.rewards[agent] = illegal_reward
        self._accumulate_rewards()
        self._deads_step_first()

    def _illegal_message(self, action: Any, agent: str, why: str = "is not legal") -> str:
        names = legal_actions_text(self.legal_actions(), self.game.action_name)
        return (
            f"action {action!r} {why} for {agent} at history {self.history} "
            f"of {self.metadata['name']}; legal actions are: {names}"
        )

    def _was_dead_step(self, action: int | None) -> None:
        """PettingZoo's ``AECEnv._was_dead_step`` (the same checks, errors and effect: the dead
        agent leaves, the next dead one is selected, or the saved live one once none is left;
        rewards are cleared in place), in fewer steps."""
        if action is not None:
            raise ValueError("when an agent is dead, the only valid action is None")
        agent = self.agent_selection
        terminations, truncations, rewards = self.terminations, self.truncations, self.rewards
        assert terminations[agent] or truncations[agent], (
            "an agent that was not dead as attempted to be removed"
        )
        del terminations[agent], truncations[agent], rewards[agent]
        del self._cumulative_rewards[agent], self.infos[agent]
        self.agents.remove(agent)
        for other in self.agents:
            if terminations[other] or truncations[other]:
                if self._skip_agent_selection is None:
                    self._skip_agent_selection = agent
                self.agent_selection = other
                break
        else:
            if self._skip_agent_selection is not None:
                self.agent_selection = self._skip_agent_selection
            self._skip_agent_selection = None
        for other in rewards:
            rewards[other] = 0

    def observe(self, agent: str) -> ObsDict:
        """``{"observation": infoset tensor, "action_mask": int8 mask}`` for ``agent`` (copies).

        Raises:
            RuntimeError: before the first ``reset()``.
            ValueError: ``agent`` is not one of the env's agents.
        """
        p = self._agent_index.get(agent)
        if p is None:
            raise self._unknown_agent(agent)
        t = self._tables
        if t is None:  # the states mode
            cur = self._cur
            if cur is None:
                raise self._not_started("observe()")
            # (the zero mask's size is the agent's action count, as an int)
            view = cur.views[p] or self._memo_view(cur, p, self._zero_masks[p].size)
            return {"observation": view[0].copy(), "action_mask": view[1].copy()}
        node = self._node
        if node < 0:
            raise self._not_started("observe()")
        vid = t.view[node][p]
        mask = (
            self._view_mask[vid]
            if t.player[node] == p or self._masks_before_turn
            else self._zero_masks[p]
        )
        return {"observation": t.view_tensor[vid].copy(), "action_mask": mask.copy()}

    # --- game-level views ----------------------------------------------------------------
    def _started(self) -> bool:
        """Whether ``reset()`` has made a game current."""
        return self._node >= 0 or self._cur is not None

    def _not_started(self, what: str) -> RuntimeError:
        """The error for reading the game before the first ``reset()`` (the tables mode would
        otherwise read node -1, a game that never happened)."""
        return RuntimeError(f"call reset() before {what}: no game has started yet")

    def _unknown_agent(self, agent: Any) -> ValueError:
        return ValueError(f"unknown agent {agent!r}; this env's agents are {self.possible_agents}")

    @property
    def history(self) -> list[int]:
        """Every action and chance outcome of the current game so far."""
        cur = self._cur
        if cur is not None:  # the states mode
            return cur.state.history()
        t = self._tables
        if t is None or self._node < 0:
            raise self._not_started("history")
        return t.history(self._node)

    def game_state(self) -> State:
        """The nashzoo ``State`` of the current game (rebuilt from the history in the tables
        mode; the states mode holds it)."""
        if self._cur is not None:  # the states mode
            return self._cur.state
        if self._node < 0:
            raise self._not_started("game_state()")
        state = self.game.new_initial_state()
        for a in self.history:
            state = state.child(a)
        return state

    def legal_actions(self) -> list[int]:
        """Legal actions of ``agent_selection`` (empty once the game is over)."""
        cur = self._cur
        if cur is not None:  # the states mode
            return list(cur.legal)
        t = self._tables
        if t is None or self._node < 0:
            raise self._not_started("legal_actions()")
        return list(t.legal[self._node])

    def render(self) -> str | None:
        """The game as text (``State.describe``) from ``render_agent``'s point of view."""
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() was called without a render_mode; pass render_mode='ansi' or 'human'"
            )
            return None
        if not self._started():
            raise self._not_started("render()")
        player = None if self.render_agent is None else self._agent_index[self.render_agent]
        text = f"[{self.metadata['name']}]\n" + self.game_state().describe(player)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.metadata['name']} on {self.game.display_id}>"

    def close(self) -> None:
        """Nothing to release (text rendering only)."""


def check_kwargs(name: str, given: Iterable[str], valid: Sequence[str]) -> None:
    """Raise a ValueError naming the valid keyword arguments if any given one is unknown."""
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise ValueError(
            f"{name} got unknown keyword arguments {unknown}; valid: {', '.join(sorted(valid))}"
        )


__all__ = [
    "ILLEGAL_ACTION_MODES",
    "RENDER_MODES",
    "TABULATE_MAX_HISTORIES",
    "EnvTables",
    "GameAECEnv",
    "OrderEnforcingWrapper",
    "PenalizeIllegalWrapper",
    "agent_name",
    "check_illegal_action",
    "env_tables",
    "to_parallel",
    "wrap_env",
]


# The wrappers live in their own module and import GameAECEnv from here, so they are
# re-exported only once everything above is defined (``from nashzoo.envs.aec import wrap_env``
# keeps working).
from nashzoo.envs.wrappers import (  # noqa: E402
    ILLEGAL_ACTION_MODES,
    OrderEnforcingWrapper,
    PenalizeIllegalWrapper,
    check_illegal_action,
    to_parallel,
    wrap_env,
)
