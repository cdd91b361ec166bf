"""Policies: what an agent would do at every information set.

* :class:`Infoset` is what a policy is asked about, :class:`Policy` the protocol
  ``action_probabilities(infoset) -> np.ndarray[num_actions]`` and :class:`BatchPolicy` the one
  of a policy that also answers a batch (``action_probabilities_batch``); they are defined
  with the rules in :mod:`nashzoo.games.infoset` (so the environments need not import this
  package) and are re-exported here.
* :class:`TabularPolicy` is a dense ``[num_infosets, num_actions]`` array over the compiled tree of
  one game. Any Policy can be materialised into one by querying every information set
  (:meth:`TabularPolicy.from_policy`): that is how neural agents get EXACT exploitability.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from nashzoo.games import CompiledTree, Game, compile_tree, load_game
from nashzoo.games.base import display_id, display_ids_apart
from nashzoo.games.infoset import (
    BatchPolicy,
    Infoset,
    Policy,
    PolicyError,
    UniformPolicy,
    as_infoset,
)
from nashzoo.games.treemath import distribution_status, uniform_strategy
from nashzoo.io.policy_file import (
    lists_of_numbers,
    read_policy_file,
    read_policy_table,
    write_policy_file,
)

_TOLERANCE = 1e-6


def sample_action(probs: np.ndarray, rng: np.random.Generator) -> int:
    """Draw an action index from ``probs`` with an explicit generator. Rounding is forgiven:
    tiny negative entries count as zero and the rest is divided by its sum (numpy's sampler
    refuses a sum off by more than about 1e-8, the policy check allows 1e-6)."""
    weights = np.maximum(probs, 0.0)
    return int(rng.choice(weights.shape[0], p=weights / weights.sum()))


class TabularPolicy:
    """A dense table of action probabilities for every information set of one game.

    Rows follow the compiled tree's infoset order (``tree.infoset_keys``). Instances are
    immutable: ``probs`` is read-only and every method that changes something returns a new
    policy, so a policy handed to an opponent or an evaluator can never be mutated under it.
    Immutability also lets a policy be checked once: :attr:`checked` says its rows are known to
    be distributions (checked by the constructor, or by the evaluator the first time it met a
    policy built with ``validate=False``), and the evaluator does not check it again.

    An array of any real dtype is taken, a boolean one as 0 and 1 (a deterministic policy's
    one-hot rows); :meth:`from_dict` and :meth:`load` take numbers only, since ``True`` in a
    table or ``true`` in a file is more likely a mistake than a probability.
    """

    def __init__(self, game: Game | str, probs: np.ndarray, *, validate: bool = True) -> None:
        self.game = load_game(game)
        self.tree = compile_tree(self.game)
        try:
            probs = _real_array(probs).copy()
        except (TypeError, ValueError) as err:
            raise PolicyError(f"a policy's probabilities must be real numbers: {err}") from None
        expected = (self.tree.num_infosets, self.tree.num_actions)
        if probs.shape != expected:
            raise PolicyError(
                f"a policy for {self.game.display_id} needs shape {expected} "
                f"(infosets x actions), got {probs.shape}"
            )
        if validate:
            probs = checked_exact(self.tree, probs)
        probs.setflags(write=False)
        self._probs = probs
        self._by_tensor: dict[bytes, list[int]] | None = None
        self._checked = validate

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copy (``copy.deepcopy``, ``pickle``; a learner copied with its policies) keeps its
        table read-only: numpy's copy of a read-only array is writeable, which would let the
        rows of a policy already checked, or a learner's live strategy, be written through
        the copy."""
        self.__dict__.update(state)
        self._probs.setflags(write=False)

    @classmethod
    def adopt(cls, game: Game, tree: CompiledTree, probs: np.ndarray) -> TabularPolicy:
        """A policy over ``probs`` itself, with neither the constructor's copy nor its check:
        for a learner handing out its current strategy every step. ``tree`` must be
        ``compile_tree(game)`` and ``probs`` a fresh C-contiguous float64 ``[I, A]`` table that
        nobody writes again (it is made read-only here). Like one built with
        ``validate=False``, the policy is checked by the evaluator the first time it is
        evaluated."""
        policy = cls.__new__(cls)
        probs.setflags(write=False)
        policy.game, policy.tree, policy._probs = game, tree, probs
        policy._by_tensor = None
        policy._checked = False
        return policy

    # --- constructors ------------------------------------------------------------------------
    @classmethod
    def uniform(cls, game: Game | str) -> TabularPolicy:
        """Uniform over legal actions at every information set."""
        game = load_game(game)
        tree = compile_tree(game)
        return cls.adopt(game, tree, uniform_strategy(tree))

    @classmethod
    def from_dict(
        cls,
        game: Game | str,
        table: Mapping[str, Sequence[float]],
        *,
        default: TabularPolicy | None = None,
    ) -> TabularPolicy:
        """From ``{infoset_key: probabilities}``: lists (or arrays) of ints and floats; a bool
        is refused, as in a policy file.

        Every information set must be listed unless ``default`` supplies the missing rows.
        """
        game = load_game(game)
        tree = compile_tree(game)
        unknown = [k for k in table if k not in tree.infoset_index]
        if unknown:
            raise PolicyError(
                f"information set {unknown[0]!r} does not exist in {game.display_id} "
                f"({len(unknown)} unknown keys; e.g. valid keys: {list(tree.infoset_keys[:4])})"
            )
        if default is not None and default.game.id != game.id:
            theirs, ours = display_ids_apart(default.game.id, game.id)
            raise PolicyError(
                f"the default policy is for {theirs}, not {ours}; pass "
                f"default=TabularPolicy.uniform({game.name!r}) or a policy of this game"
            )
        probs = (
            np.array(default.probs)
            if default is not None
            else np.zeros((tree.num_infosets, tree.num_actions))
        )
        given = np.zeros(tree.num_infosets, dtype=bool)
        rows = list(table.values())
        whole = None
        if lists_of_numbers(rows) and set(map(len, rows)) <= {tree.num_actions}:
            # Every row a list of the right number of numbers: one conversion for the whole
            # table (a file's rows); anything else row by row, which names a bad row.
            with contextlib.suppress(OverflowError):  # an int past the largest float
                whole = np.array(rows, dtype=np.float64).reshape(len(rows), tree.num_actions)
        if whole is not None:
            indices = np.fromiter(map(tree.infoset_index.__getitem__, table), dtype=np.int64)
            probs[indices] = whole
            given[indices] = True
        else:
            for key, row in table.items():
                index = tree.infoset_index[key]
                probs[index] = _numeric_row(key, row, tree.num_actions)
                given[index] = True
        missing = np.flatnonzero(~given)
        if default is None and missing.size:
            raise PolicyError(
                f"the policy has no probabilities for information set "
                f"{tree.infoset_keys[missing[0]]!r} ({missing.size} missing); give every "
                "information set or pass default=TabularPolicy.uniform(game)"
            )
        return cls(game, probs)

    @classmethod
    def from_policy(
        cls,
        game: Game | str,
        policy: Policy | Callable[[Infoset], Any],
        *,
        rows: np.ndarray | None = None,
    ) -> TabularPolicy:
        """Materialise any Policy (or callable) by querying every information set.

        This is how neural agents get exact exploitability: the evaluator then works on the
        table, with no sampling error. ``rows`` (infoset indices, e.g.
        ``tree.infosets_of(seat)``) limits the queries to those information sets, for a policy
        that only knows how to play one seat; the other rows are then uniform. A policy that
        says it plays one seat (an integer ``seat`` attribute: a learner's policies, ``from_sb3(...,
        seat=0)``) is asked only about that seat's information sets, as a tabular learner's
        policy holds only its own seat's strategy: its network never learned the other seat.
        """
        game = load_game(game)
        tree = compile_tree(game)
        if isinstance(policy, TabularPolicy):
            if policy.game.id != game.id:
                theirs, ours = display_ids_apart(policy.game.id, game.id)
                raise PolicyError(f"policy is for {theirs}, not {ours}")
            if rows is None:
                return policy
            probs = uniform_strategy(tree)
            rows = np.asarray(rows, dtype=np.int64)
            probs[rows] = policy.probs[rows]
            return cls(game, probs)
        if rows is None:
            seat = seat_of(policy, game)
            if seat is None:
                return cls(game, policy_rows(tree, policy, np.arange(tree.num_infosets)))
            rows = tree.infosets_of(seat)
        rows = np.asarray(rows, dtype=np.int64)
        probs = uniform_strategy(tree)
        probs[rows] = policy_rows(tree, policy, rows)
        return cls(game, probs)

    @classmethod
    def joint(cls, game: Game | str, seat_policies: Sequence[Policy]) -> TabularPolicy:
        """One policy from one per seat: player ``p``'s rows come from ``seat_policies[p]``,
        which is asked only about player ``p``'s information sets.

        A seat's :class:`TabularPolicy` over this game's tree gives its rows as they are, with
        no intermediate policy; the joint table is checked once, and not at all when every
        seat's policy was checked already (its rows are then those checked rows)."""
        game = load_game(game)
        tree = compile_tree(game)
        if len(seat_policies) != game.num_players:
            raise PolicyError(
                f"{game.display_id} has {game.num_players} seats, got {len(seat_policies)} policies"
            )
        probs = np.empty((tree.num_infosets, tree.num_actions))
        checked = True
        for p, policy in enumerate(seat_policies):
            rows = tree.infosets_of(p)
            if isinstance(policy, TabularPolicy) and policy.tree is tree:
                probs[rows] = policy.probs[rows]
                checked = checked and policy.checked
            else:  # materialised and checked (a table of another game is refused there, and
                # one over a tree compiled before the caches were cleared is checked anew)
                probs[rows] = cls.from_policy(game, policy, rows=rows).probs[rows]
        joint = cls.adopt(game, tree, probs)
        if checked:
            joint._checked = True
            return joint
        return joint.check()

    # --- access --------------------------------------------------------------------------
    @property
    def probs(self) -> np.ndarray:
        """Read-only ``[num_infosets, num_actions]`` array."""
        return self._probs

    @property
    def checked(self) -> bool:
        """Whether the rows are known to be distributions over the legal actions."""
        return self._checked

    def check(self) -> TabularPolicy:
        """Raise :class:`PolicyError` naming the first row that is not a distribution over its
        legal actions; a policy that passed once is not checked again (it cannot change)."""
        if not self._checked:
            exact = checked_exact(self.tree, self._probs)
            if exact is not self._probs:  # rows within the tolerance, made exact once
                exact.setflags(write=False)
                self._probs = exact
            self._checked = True
        return self

    def row(self, key: str) -> np.ndarray:
        """A copy of the probabilities at the information set with this key (KeyError naming
        the key if the game has none)."""
        return self._probs[self.tree.index_of(key)].copy()

    def _index(self, infoset: Infoset) -> int:
        index = self.tree.infoset_index.get(infoset.key)
        if index is not None:
            return index
        if self._by_tensor is None:
            # tensor -> every set with it (dark_hex: 134 sets share 55 distinct tensors; only
            # the player, or else a key, can tell those apart)
            by_tensor: dict[bytes, list[int]] = {}
            for i, tensor in enumerate(self.tree.infoset_tensors):
                by_tensor.setdefault(tensor.tobytes(), []).append(i)
            self._by_tensor = by_tensor
        tensor = np.asarray(infoset.tensor, dtype=np.float32).tobytes()
        found = self._by_tensor.get(tensor, [])
        if len(found) > 1 and infoset.player >= 0:
            found = [i for i in found if self.tree.infoset_player[i] == infoset.player]
        if not found:
            raise PolicyError(f"information set {infoset.key!r} is not in {self.game.display_id}")
        if len(found) > 1:
            raise PolicyError(
                f"{len(found)} information sets of {self.game.display_id} share this tensor, so it "
                "does not say which row to play; ask with the information set's key (Infoset.key, "
                "or the env's info['infoset_key'])"
            )
        return found[0]

    def action_probabilities(self, infoset: Infoset) -> np.ndarray:
        """A copy of the row of ``infoset``, found by its key, or by its tensor when the key is
        not one of the game's (an env observation read without its key)."""
        return self._probs[self._index(infoset)].copy()

    def action_probabilities_batch(
        self, players: np.ndarray, tensors: np.ndarray, legal_masks: np.ndarray
    ) -> np.ndarray:
        """Rows for a batch of tensors (the materialisation fast path)."""
        if tensors is self.tree.infoset_tensors:
            return self._probs.copy()
        return np.stack(
            [
                self.action_probabilities(Infoset(int(p), "", t, m))
                for p, t, m in zip(players, tensors, legal_masks, strict=True)
            ]
        )

    def act(self, infoset: Infoset | Mapping[str, Any], rng: np.random.Generator) -> int:
        """Sample an action for an :class:`Infoset` or a PettingZoo observation dict
        (acting never changes the policy)."""
        return sample_action(self.action_probabilities(as_infoset(infoset)), rng)

    def to_dict(self) -> dict[str, list[float]]:
        """Information-set key -> probabilities, as plain lists (what :meth:`from_dict` reads)."""
        return {k: self._probs[i].tolist() for i, k in enumerate(self.tree.infoset_keys)}

    def with_rows(self, player: int, other: TabularPolicy) -> TabularPolicy:
        """A copy whose rows for ``player`` come from ``other``."""
        probs = self._probs.copy()
        rows = self.tree.infosets_of(player)
        probs[rows] = other.probs[rows]
        return TabularPolicy(self.game, probs, validate=False)

    # --- persistence -------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write JSON (game id and params, action names, ``{key: probabilities}``) atomically."""
        rows = ((key, self._probs[i].tolist()) for i, key in enumerate(self.tree.infoset_keys))
        write_policy_file(path, self.game, rows)  # row by row: a big game's table is never whole

    @classmethod
    def load(cls, path: str | os.PathLike[str], game: Game | str | None = None) -> TabularPolicy:
        """Read a file written by :meth:`save`, validating it against its game.

        The file is streamed into the table (:func:`~nashzoo.io.policy_file.read_policy_table`)
        wherever that gives the whole read's table; otherwise, and on any error in the file, it
        is read whole, which names the problem."""
        streamed = read_policy_table(path)
        if streamed is None:
            stored = read_policy_file(path)
            _refuse_another_game(path, stored.game, game)
            try:
                return cls.from_dict(stored.game, stored.table)
            except PolicyError as err:
                raise PolicyError(f"{path}: {err}") from None
        _refuse_another_game(path, streamed.game, game)
        try:  # what the constructor checks, without its copy of the table
            probs = checked_exact(streamed.tree, streamed.probs)
        except PolicyError as err:
            raise PolicyError(f"{path}: {err}") from None
        policy = cls.adopt(streamed.game, streamed.tree, probs)
        policy._checked = True
        return policy

    def __repr__(self) -> str:
        return f"TabularPolicy({self.game.display_id}, {self.tree.num_infosets} infosets)"


def _refuse_another_game(
    path: str | os.PathLike[str], stored: Game, game: Game | str | None
) -> None:
    """Raise :class:`PolicyError` when ``game`` is given and is not the game ``stored`` (the
    one the file at ``path`` names)."""
    if game is not None and load_game(game).id != stored.id:
        theirs, ours = display_ids_apart(stored.id, load_game(game).id)
        raise PolicyError(f"{path} holds a policy for {theirs}, not for {ours}")


def _numeric_row(key: str, row: Any, num_actions: int) -> np.ndarray:
    """``row`` as ``num_actions`` floats; anything but real numbers is refused by name."""
    if isinstance(row, (str, bytes, Mapping)) or not isinstance(row, (Sequence, np.ndarray)):
        raise PolicyError(
            f"information set {key!r}: expected a list of {num_actions} probabilities, "
            f"got {type(row).__name__} {row!r}"
        )
    values = list(row)
    for value in values:
        number = isinstance(value, (int, float, np.integer, np.floating))
        if isinstance(value, (bool, np.bool_)) or not number:
            raise PolicyError(
                f"information set {key!r}: probabilities must be numbers, got {value!r} in {row!r}"
            )
    try:
        out = np.asarray(values, dtype=np.float64)
    except OverflowError:  # an int past the largest float (a file may hold 10**400)
        big = max((int(v) for v in values), key=abs)
        digits = int(big.bit_length() * 0.30103) + 1  # str() of it may be refused as too long
        raise PolicyError(
            f"information set {key!r}: an integer of about {digits} digits is too large to be "
            "a probability"
        ) from None
    if out.shape != (num_actions,):
        raise PolicyError(
            f"information set {key!r}: expected {num_actions} probabilities, got shape {out.shape}"
        )
    return out


def seat_of(policy: Any, game: Game) -> int | None:
    """The one seat ``policy`` says it plays (its integer ``seat`` attribute, a player of
    ``game``), or ``None``: it plays every seat."""
    seat = getattr(policy, "seat", None)
    if not isinstance(seat, (int, np.integer)) or isinstance(seat, bool):
        return None
    return int(seat) if 0 <= int(seat) < game.num_players else None


def policy_rows(
    tree: CompiledTree, policy: Policy | Callable[[Infoset], Any], rows: np.ndarray
) -> np.ndarray:
    """``[len(rows), num_actions]``: what ``policy`` answers at the information sets ``rows``
    of ``tree`` (one batched call for a :class:`BatchPolicy`), unchecked; a failure names the
    information set. What :meth:`TabularPolicy.from_policy` and the tree players' lazily
    materialised opponents ask."""
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(policy, TabularPolicy) and policy.tree is tree:
        # Rows by index: asked by tensor, a game whose information sets share tensors (dark_hex:
        # 134 sets, 55 distinct tensors) would get another set's row.
        return np.array(policy.probs[rows])
    tree_rows = getattr(policy, "tree_rows", None)
    if callable(tree_rows):  # a policy whose play depends on its own past moves (NFSP's)
        return np.asarray(tree_rows(tree, rows), dtype=np.float64)
    if isinstance(policy, BatchPolicy):
        try:
            answer = policy.action_probabilities_batch(
                tree.infoset_player[rows], tree.infoset_tensors[rows], tree.legal_mask[rows]
            )
            out = _real_array(answer)
        except PolicyError as err:
            if err.row is None or not 0 <= err.row < rows.size:
                raise  # it names the problem already
            key = tree.infoset_keys[int(rows[err.row])]  # the adapter saw only tensors
            raise PolicyError(
                f"{err}, the first at information set {key!r} of {display_id(tree.game_id)}"
            ) from err
        except Exception as err:
            raise PolicyError(
                f"the policy failed answering {rows.size} information sets of "
                f"{display_id(tree.game_id)} "
                f"in one batch ({type(err).__name__}: {err}); it must answer every "
                "information set of the game"
            ) from err
        if out.shape != (rows.size, tree.num_actions):
            raise PolicyError(
                f"the policy answered {rows.size} information sets of {display_id(tree.game_id)} "
                "with an "
                f"array of shape {out.shape}; expected ({rows.size}, {tree.num_actions}): one "
                "row per information set, zeros on illegal actions"
            )
        return out
    query = policy.action_probabilities if isinstance(policy, Policy) else policy
    out = np.empty((rows.size, tree.num_actions))
    for k, i in enumerate(rows.tolist()):
        out[k] = _query_row(tree, query, i)
    return out


def _real_array(values: Any) -> np.ndarray:
    """``values`` as a float64 array; a complex, string or object array is refused (numpy would
    drop an imaginary part with only a warning)."""
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"expected real numbers, got an array of dtype {array.dtype}")
    return np.asarray(array, dtype=np.float64)


def _query_row(tree: CompiledTree, query: Callable[[Infoset], Any], index: int) -> np.ndarray:
    """One materialised row; any failure names the information set that caused it."""
    infoset = Infoset.from_tree(tree, index)
    try:
        row = _real_array(query(infoset))
    except Exception as err:
        raise PolicyError(
            f"the policy failed at information set {infoset.key!r} of {display_id(tree.game_id)} "
            f"({type(err).__name__}: {err}); it must answer every information set of the game"
        ) from err
    if row.shape != (tree.num_actions,):
        raise PolicyError(
            f"the policy returned shape {row.shape} at information set {infoset.key!r}; "
            f"{display_id(tree.game_id)} needs {tree.num_actions} probabilities (zeros on illegal "
            "actions)"
        )
    return row


def check_distributions(
    tree: CompiledTree, probs: np.ndarray, *, rows: np.ndarray | None = None
) -> None:
    """Raise :class:`PolicyError` naming the first information set whose row is not a
    probability distribution over its legal actions."""
    if rows is None and _all_distributions(tree, probs):
        return  # fast path: whole-table reductions; the per-row pass below only names culprits
    idx = np.arange(tree.num_infosets) if rows is None else rows
    sub = probs[idx]
    mask = tree.legal_mask[idx]
    bad_value = ~np.isfinite(sub).all(axis=1) | (sub < -_TOLERANCE).any(axis=1)
    illegal = (np.abs(np.where(mask, 0.0, sub)) > _TOLERANCE).any(axis=1)
    bad_sum = np.abs(np.where(mask, sub, 0.0).sum(axis=1) - 1.0) > _TOLERANCE
    for problem, text in (
        (bad_value, "has negative or non-finite probabilities"),
        (illegal, "puts probability on an illegal action"),
        (bad_sum, "does not sum to one over its legal actions"),
    ):
        hits = np.flatnonzero(problem)
        if hits.size:
            i = idx[hits[0]]
            legal = np.flatnonzero(tree.legal_mask[i]).tolist()
            raise PolicyError(
                f"information set {tree.infoset_keys[i]!r} {text}: {probs[i].tolist()} "
                f"(legal actions {legal}); {hits.size} row(s) affected"
            )


_EXACT = 1e-12
"""Rows that sum to one within this, with no negative entry and nothing on an illegal action,
are left bit for bit by :func:`made_exact`."""


def checked_exact(tree: CompiledTree, probs: np.ndarray) -> np.ndarray:
    """:func:`check_distributions`, then :func:`made_exact`, with one compiled pass deciding
    both where numba is in use: a table of exact rows (a learner's) is read once, not twice."""
    status = distribution_status(tree, probs, _TOLERANCE, _EXACT)
    if status == 0:
        return probs
    if status != 1:  # some row is off (the per-row pass names it), or no compiled pass here
        check_distributions(tree, probs)
    return _rows_made_exact(tree, probs)


def made_exact(tree: CompiledTree, probs: np.ndarray) -> np.ndarray:
    """``probs`` (rows that passed :func:`check_distributions`) with every row that is a
    distribution only within the check's tolerance (rounded numbers from a file, say) made an
    exact one: negative entries and mass on illegal actions set to zero, the legal entries
    divided by their sum. Returns ``probs`` itself when no row needs it, so exact rows, such
    as a learner's, keep every bit."""
    if distribution_status(tree, probs, _TOLERANCE, _EXACT) == 0:
        return probs  # one compiled pass said so
    return _rows_made_exact(tree, probs)


def _rows_made_exact(tree: CompiledTree, probs: np.ndarray) -> np.ndarray:
    """:func:`made_exact`'s numpy pass: finds the rows within the tolerance and mends them."""
    legal = np.where(tree.legal_mask, probs, 0.0)
    off = (
        (probs < 0.0).any(axis=1)
        | (probs != legal).any(axis=1)
        | (np.abs(legal.sum(axis=1) - 1.0) > _EXACT)
    )
    if not off.any():
        return probs
    out = np.array(probs, dtype=np.float64, copy=True)
    fixed = np.maximum(legal[off], 0.0)
    out[off] = fixed / fixed.sum(axis=1, keepdims=True)
    return out


def _all_distributions(tree: CompiledTree, probs: np.ndarray) -> bool:
    """True when every row is finite, non-negative, zero off the legal actions and sums to one
    on them (within the tolerance); one compiled pass where numba is in use, else a few
    whole-array reductions instead of per-row ones. Every path adds a row in the order of
    numpy's ``sum(axis=1)``, so a row whose sum is off one by about the tolerance is decided
    alike by all of them (a matrix product, which adds in BLAS's order, once decided some
    such rows otherwise than the per-row pass and the compiled one)."""
    status = distribution_status(tree, probs, _TOLERANCE, _EXACT)
    if status is not None:
        return status < 2
    mask = tree.legal_mask
    if probs.shape != mask.shape:
        return False
    with np.errstate(invalid="ignore"):
        legal_part = np.where(mask, probs, 0.0)
        return bool(
            np.isfinite(probs).all()
            and probs.min(initial=0.0) >= -_TOLERANCE
            and np.abs(probs - legal_part).max(initial=0.0) <= _TOLERANCE
            and np.abs(legal_part.sum(axis=1) - 1.0).max(initial=0.0) <= _TOLERANCE
        )


__all__ = [
    "Infoset",
    "Policy",
    "PolicyError",
    "TabularPolicy",
    "UniformPolicy",
    "as_infoset",
    "check_distributions",
    "checked_exact",
    "made_exact",
    "policy_rows",
    "sample_action",
]
