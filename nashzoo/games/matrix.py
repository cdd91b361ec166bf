"""Two-player matrix (normal-form) games played as two sequential moves.

Player 0 (the row player) moves first, then player 1 (the column player) moves *without seeing*
player 0's choice: player 1's information set is the same whatever player 0 chose, so the
sequential tree is strategically identical to the simultaneous-move matrix game. This is the
form Rock-Paper-Scissors takes in the project: the second mover cannot see the first move.

Information-set tensor layout (length ``2 + num_actions``):
    [0:2]   one-hot of the observing player
    [2:]    one-hot of the observing player's own move, all zeros before it has moved

Information-set keys read ``"p0"`` / ``"p1"`` before the player moved and ``"p0:rock"`` after.

Presets (payoffs to the row player; column player gets the negative unless stated):
    rps               Rock-Paper-Scissors, win 1 / lose -1.
    biased_rps        Biased RPS: OpenSpiel's ``matrix_brps`` with every payoff divided by 100
                      (same equilibrium; OpenSpiel's rows are [0,-25,50], [25,0,-5], [-50,5,0]),
                      so rock/paper/scissors rows [0,-.25,.5], [.25,0,-.05], [-.5,.05,0].
    matching_pennies  heads/tails, row wins 1 on a match.
    prisoners_dilemma general-sum: cooperate/defect with payoffs (3,3) (0,5) (5,0) (1,1).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nashzoo.games.base import TERMINAL, Game, State, as_tensor, check_player, one_hot, short_repr
from nashzoo.games.compiled import CompiledTree, readonly

PRESETS: dict[str, dict[str, Any]] = {
    "rps": {
        "row_payoffs": [[0, -1, 1], [1, 0, -1], [-1, 1, 0]],
        "action_names": ["rock", "paper", "scissors"],
    },
    "biased_rps": {
        "row_payoffs": [[0, -0.25, 0.5], [0.25, 0, -0.05], [-0.5, 0.05, 0]],
        "action_names": ["rock", "paper", "scissors"],
    },
    "matching_pennies": {
        "row_payoffs": [[1, -1], [-1, 1]],
        "action_names": ["heads", "tails"],
    },
    "prisoners_dilemma": {
        "row_payoffs": [[3, 0], [5, 1]],
        "col_payoffs": [[3, 5], [0, 1]],
        "action_names": ["cooperate", "defect"],
    },
}


ZERO_SUM_TOLERANCE = 1e-9
"""``zero_sum`` holds when every ``row + col`` is within this times the largest payoff of 0
(the tolerance :func:`nashzoo.eval.constant_sum` uses for the spread of the sums)."""


def _as_matrix(values: Any, what: str) -> np.ndarray:
    try:
        mat = np.array(values, dtype=np.float64)  # a copy: the game makes it read-only
    except (TypeError, ValueError, OverflowError) as err:  # 10**400 overflows a float
        raise ValueError(f"{what} must be a rectangular 2-D array of numbers: {err}") from None
    kind = np.asarray(values).dtype.kind  # rectangular, as the conversion above found
    if kind == "b":  # numpy would read True as 1.0
        raise ValueError(f"{what} must hold numbers, got True/False: write 1 and 0")
    if kind in "US":  # ... and "1e6" as 1e6
        raise ValueError(f"{what} must hold numbers, got text: write them without quotes")
    if mat.ndim != 2 or mat.shape[0] < 1 or mat.shape[1] < 1:
        raise ValueError(f"{what} must be a non-empty 2-D array, got shape {mat.shape}")
    if not np.all(np.isfinite(mat)):
        raise ValueError(f"{what} must contain only finite numbers")
    return mat


def _check_names(action_names: Any) -> list[str]:
    """Action names as a list of distinct, non-empty strings (or a clear ValueError)."""
    try:
        if isinstance(action_names, (str, bytes, Mapping, set, frozenset)):
            raise TypeError
        names = [str(a) for a in action_names]
    except TypeError:
        raise ValueError(
            f"action_names must be a list of strings, one per action, got {action_names!r}"
        ) from None
    empty = [i for i, a in enumerate(names) if not a.strip()]
    if empty:
        raise ValueError(f"action_names must be non-empty; action(s) {empty} have blank names")
    repeated = sorted({a for a in names if names.count(a) > 1})
    if repeated:
        raise ValueError(
            f"action_names must be distinct (they identify moves in information-set keys); "
            f"repeated: {repeated}"
        )
    return names


def _payoffs(
    preset: str | None,
    row_payoffs: Sequence[Sequence[float]] | None,
    col_payoffs: Sequence[Sequence[float]] | None,
    *,
    record_preset: bool,
) -> tuple[np.ndarray, np.ndarray, list[str], dict[str, Any]]:
    """``(row, col, default action names, params)`` of a matrix game given by a preset or by
    its payoff matrices (``col`` defaults to ``-row``), checked; ``params`` records what makes
    the game's id (the preset only when ``record_preset``: a game named after its preset, such
    as ``rps``, does not repeat it)."""
    params: dict[str, Any] = {}
    if preset is not None and not isinstance(preset, str):
        raise ValueError(
            f"preset must be a preset name ({', '.join(PRESETS)}), got {short_repr(preset)}; pass "
            "payoffs by name: MatrixGame(row_payoffs=[[...]]) or load_game('matrix', "
            'row_payoffs=[[...]]), or --game "matrix(row_payoffs=[[...]])" on the command line'
        )
    if preset is not None:
        if row_payoffs is not None or col_payoffs is not None:
            raise ValueError("give either preset= or row_payoffs=/col_payoffs=, not both")
        if preset not in PRESETS:
            raise ValueError(
                f"unknown matrix preset {preset!r}; valid presets: {', '.join(PRESETS)}"
            )
        spec = PRESETS[preset]
        row_payoffs = spec["row_payoffs"]
        col_payoffs = spec.get("col_payoffs")
        default_names = list(spec["action_names"])
        if record_preset:
            params["preset"] = preset
    elif row_payoffs is None:
        raise ValueError(
            "a matrix game needs preset=NAME or row_payoffs=[[...]]; "
            f"valid presets: {', '.join(PRESETS)}"
        )
    row = _as_matrix(row_payoffs, "row_payoffs")
    col = -row if col_payoffs is None else _as_matrix(col_payoffs, "col_payoffs")
    if preset is None:
        default_names = [f"a{i}" for i in range(max(row.shape))]
        params["row_payoffs"] = row.tolist()
        if col_payoffs is not None:
            params["col_payoffs"] = col.tolist()
    if col.shape != row.shape:
        raise ValueError(
            f"col_payoffs shape {col.shape} differs from row_payoffs shape {row.shape}"
        )
    return row, col, default_names, params


class MatrixGame(Game):
    """A two-player matrix game from payoff matrices (zero-sum unless ``col_payoffs`` given).

    Args:
        preset: one of ``PRESETS`` (``rps``, ``biased_rps``, ``matching_pennies``,
            ``prisoners_dilemma``); exclusive with ``row_payoffs``.
        row_payoffs: ``[m][n]`` payoffs to player 0.
        col_payoffs: ``[m][n]`` payoffs to player 1; defaults to ``-row_payoffs``.
        action_names: distinct, non-empty names of the ``max(m, n)`` actions (default: the
            preset's names, else ``a0, a1, ...``). Names other than the default are recorded in
            ``params`` and so in ``game.id``.
    """

    num_players = 2

    def __init__(
        self,
        preset: str | None = None,
        row_payoffs: Sequence[Sequence[float]] | None = None,
        col_payoffs: Sequence[Sequence[float]] | None = None,
        action_names: Sequence[str] | None = None,
        *,
        name: str = "matrix",
    ) -> None:
        row, col, default_names, params = _payoffs(
            preset, row_payoffs, col_payoffs, record_preset=name == "matrix"
        )
        self.name = name
        # Read-only: the id, the cached tree and the States must all see the same payoffs (an
        # edit in place changed what States returned and nothing else).
        self.row_payoffs = readonly(row)
        self.col_payoffs = readonly(col)
        self.num_row_actions, self.num_col_actions = row.shape
        self.num_actions = max(row.shape)
        names = default_names if action_names is None else _check_names(action_names)
        if len(names) != self.num_actions:
            raise ValueError(
                f"action_names has {len(names)} names but the game has {self.num_actions} actions"
            )
        if names != default_names:
            # Part of the game's id: the names appear in information-set keys, so two games
            # that differ only in names must not share compiled trees or env tables.
            params["action_names"] = names
        self.action_names = tuple(names)
        # Relative to the payoffs, as eval.constant_sum: numpy's absolute 1e-8 called every
        # game with payoffs below it zero-sum, and none above 1e8 with a rounding error.
        scale = max(float(np.abs(row).max()), float(np.abs(col).max()))
        self.zero_sum = bool(np.abs(row + col).max() <= ZERO_SUM_TOLERANCE * scale)
        self.infoset_tensor_size = 2 + self.num_actions
        super().__init__(params)

    def payoff_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Writable copies of the ``(row_payoffs, col_payoffs)`` matrices (the attributes
        themselves are read-only: a game never changes; build a new one from edited copies)."""
        return self.row_payoffs.copy(), self.col_payoffs.copy()

    def num_actions_of(self, player: int) -> int:
        """How many actions ``player`` has (rows for player 0, columns for player 1)."""
        return self.num_row_actions if check_player(self, player) == 0 else self.num_col_actions

    def new_initial_state(self) -> MatrixState:
        return MatrixState(self, ())

    def compile_arrays(self) -> CompiledTree:
        """The whole tree in a few numpy calls: the root (player 0's one information set), one
        node per row (player 1's one information set: it does not see the row), one terminal
        per cell, row-major; keys and tensors from the States on first use."""
        rows, cols = self.row_payoffs.shape
        actions, cells = self.num_actions, rows * cols
        row, col = np.divmod(np.arange(cells), cols)
        legal = np.zeros((2, actions), dtype=bool)
        legal[0, :rows] = legal[1, :cols] = True
        root = self.new_initial_state()
        arrays = {
            "parent": np.concatenate(([-1], np.zeros(rows, dtype=np.int64), 1 + row)),
            "player": np.repeat([0, 1, TERMINAL], [1, rows, cells]),
            "infoset": np.repeat([0, 1, -1], [1, rows, cells]),
            "action": np.concatenate(([-1], np.arange(rows), col)),
            "chance_prob": np.ones(1 + rows + cells),
            "level_starts": np.array([0, 1, 1 + rows, 1 + rows + cells]),
            "infoset_player": np.array([0, 1]),
            "infoset_depth": np.zeros(2),
            "infoset_parent_sequence": np.full(2, 2 * actions),
            "legal_mask": legal,
            "terminal_nodes": np.arange(1 + rows, 1 + rows + cells),
            "terminal_utility": np.stack([self.row_payoffs.ravel(), self.col_payoffs.ravel()], 1),
            "terminal_chance_reach": np.ones(cells),
            "terminal_last_sequence": np.stack([row, actions + col]),
        }
        return CompiledTree(
            game_id=self.id,
            num_players=2,
            num_actions=actions,
            **{name: readonly(values.astype(_DTYPES[name])) for name, values in arrays.items()},
            infoset_labels=functools.partial(_labels, root),
        )


_DTYPES = {name: np.int32 for name in CompiledTree.__dataclass_fields__} | {
    "player": np.int8,
    "infoset_player": np.int8,
    "chance_prob": np.float64,
    "terminal_utility": np.float64,
    "terminal_chance_reach": np.float64,
    "level_starts": np.int64,
    "legal_mask": np.bool_,
}
"""The dtype of each array of a compiled tree (ids are int32)."""


def _labels(root: MatrixState) -> tuple[tuple[str, ...], np.ndarray]:
    """Keys and tensors of the two information sets: at the root and after row 0."""
    second = root._child(0)
    keys = (root.infoset_key(0), second.infoset_key(1))
    return keys, np.stack([root.infoset_tensor(0), second.infoset_tensor(1)])


class MatrixState(State):
    game: MatrixGame

    def __init__(self, game: MatrixGame, moves: tuple[int, ...]) -> None:
        super().__init__(game)
        self._moves = moves

    def current_player(self) -> int:
        return len(self._moves) if len(self._moves) < 2 else TERMINAL

    def legal_actions(self) -> list[int]:
        if len(self._moves) >= 2:
            return []
        return list(range(self.game.num_actions_of(len(self._moves))))

    def _child(self, action: int) -> MatrixState:
        return MatrixState(self.game, (*self._moves, action))

    def returns(self) -> np.ndarray:
        if len(self._moves) < 2:
            return np.zeros(2)
        a, b = self._moves
        return np.array([self.game.row_payoffs[a, b], self.game.col_payoffs[a, b]])

    def history(self) -> list[int]:
        return list(self._moves)

    def _own_move(self, player: int) -> int | None:
        return self._moves[player] if len(self._moves) > player else None

    def infoset_key(self, player: int) -> str:
        player = check_player(self.game, player)
        own = self._own_move(player)
        return f"p{player}" if own is None else f"p{player}:{self.game.action_names[own]}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        player = check_player(self.game, player)
        return as_tensor(
            one_hot(2, player) + one_hot(self.game.num_actions, self._own_move(player))
        )

    def describe(self, player: int | None = None) -> str:
        names = self.game.action_names
        lines = [f"{self.game.display_id}: player 0 moves, then player 1 without seeing that move."]
        for p in range(2):
            move = self._own_move(p)
            shown = player is None or player == p or self.is_terminal()
            text = "not yet" if move is None else (names[move] if shown else "hidden")
            lines.append(f"  player {p}: {text}")
        if self.is_terminal():
            r = self.returns()
            lines.append(f"  result: player 0 gets {r[0] + 0.0:g}, player 1 gets {r[1] + 0.0:g}")
        else:
            lines.append(f"  to move: player {self.current_player()}")
        return "\n".join(lines)
