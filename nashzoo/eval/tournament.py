"""Round-robin tournaments between policies: exact payoffs from the tree, sampled matches
through the PettingZoo environment, and a ranking.

Every pair of entrants meets on both seats. The *exact* expected payoff comes from the compiled
tree (no sampling error); the *sampled* payoff comes from matches actually played through the
public ``env()`` of the game, with a 95% confidence interval (normal approximation, ``1.96``
standard errors). The two must agree within the interval: that is the end-to-end check that the
environment, the policies and the evaluator tell the same story.

A sampled payoff averages two seatings played separately, so its standard error comes from each
seating's own spread: ``sqrt(var_0 / n + var_1 / n) / 2``. Pooling the ``2n`` payoffs as one
sample would count the difference between the seats as noise (a game that pays seat 0 a fixed
+5 has no sampling error at all, and the pooled interval was +-0.7 at 100 matches). An entrant
against itself holds both seats of the same matches, so its cell averages the two seats' payoffs
match by match (zero, with no error, in a zero-sum game). One match per seating gives no
interval (``nan``).

Each pairing (an entrant in seat 0, another or itself in seat 1) plays its matches from a random
stream of its own, a function of the seed and the pairing alone (:func:`pairing_rng`): the same
seed gives the same table whichever pairings were played first, or in an earlier process (a
tournament resumed from its ``out`` folder, :mod:`nashzoo.eval.tournament_folder`).

Entrants are built by :func:`load_entrant` from a spec:

``uniform``
    uniform over legal actions.
``equilibrium``
    the exact equilibrium from the sequence-form LP (two-player zero-sum games).
``fixed:P1,P2,...``
    one mixed strategy for every seat of a matrix game, e.g. ``fixed:0.3,0.3,0.4`` in RPS;
    ``fixed:P1,P2;Q1,Q2,Q3`` gives one per seat (players with different numbers of actions).
``PATH.json``
    a saved :class:`~nashzoo.agents.TabularPolicy`.
``PATH.npz``
    a learner checkpoint (its average policy plays) or a trainer checkpoint such as the
    ``checkpoint.npz`` of ``nashzoo train`` and ``race`` (the joint average policy plays).
``PATH.zip``
    a Stable-Baselines3 model trained on the game's information-set tensors
    (:func:`nashzoo.agents.adapters.from_sb3`; the same network plays both seats).

``NAME=SPEC`` names an entrant explicitly (e.g. ``cfr=runs/cfr/policy.json``).

An entrant built from a spec keeps it (:attr:`Entrant.spec`): a tournament kept in a folder stores
its entrants' specs, so the folder alone resumes it (``nashzoo tournament --out DIR --resume``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nashzoo.agents import Infoset, PolicyError, TabularPolicy
from nashzoo.agents.fixed import fixed_policy
from nashzoo.agents.loading import load_policy_and_seat
from nashzoo.agents.policy import sample_action
from nashzoo.eval.exact import expected_returns
from nashzoo.eval.lp import constant_sum, solve_game
from nashzoo.eval.numbers import format_number, payoff_spec, rank_by
from nashzoo.games import Game, compile_tree, load_game
from nashzoo.games.base import brief_repr, display_id, display_ids_apart, is_whole_number
from nashzoo.games.progress import progress_bar

BUILTIN_ENTRANTS = ("uniform", "equilibrium", "fixed:P1,P2,...")


@dataclass(frozen=True)
class Entrant:
    """A named policy taking part in a tournament.

    ``spec`` is the spec :func:`load_entrant` built it from, as given (``None`` for an entrant
    built by hand): a tournament kept in a folder stores its entrants' specs when each has one,
    so that it can be resumed from the folder alone."""

    name: str
    policy: TabularPolicy
    trained_seat: int | None = None  # one learner's checkpoint: the only seat it learned
    spec: str | None = None

    def seat_note(self) -> str | None:
        """For an entrant loaded from one learner's checkpoint, a line saying that in its
        other seats it plays what that learner holds there (``None`` for any other)."""
        if self.trained_seat is None:
            return None
        return (
            f"note: {self.name} is one learner, trained for seat {self.trained_seat}; in the "
            "other seat it plays what that learner holds there (uniform for a tabular "
            "learner), not anything it learned"
        )


def _equilibrium(game: Game) -> TabularPolicy:
    """The ``equilibrium`` entrant: an exact equilibrium, which is a safe strategy to play
    against anyone only where the game has one value (two players, zero- or constant-sum).
    Refused elsewhere in the entrant's own words (the LP's refusal named solve_game and
    suggested nash_conv, which is no agent)."""
    if game.num_players != 2 or constant_sum(game) is None:
        raise ValueError(
            "the equilibrium agent needs a two-player zero-sum (or constant-sum) game, where "
            f"an equilibrium is safe against any opponent; {game.display_id} is not (its "
            "payoffs do not sum to a constant): choose another agent, such as uniform, "
            "fixed:P1,P2,... or a trained policy file"
        )
    return solve_game(game).policy


def _split_spec(spec: str) -> tuple[str, str]:
    """A spec's explicit name (``""`` when none) and its agent (``NAME=SPEC``, or ``SPEC``)."""
    name, sep, body = spec.partition("=")
    if not sep:
        name, body = "", spec
    return name, body.strip()


def spec_file(spec: str) -> Path | None:
    """The file a spec names (as written: a relative path stays relative), or ``None`` for a
    built-in agent (``uniform``, ``equilibrium``, ``fixed:...``)."""
    body = _split_spec(spec)[1]
    if not body or body in ("uniform", "equilibrium") or body.startswith("fixed:"):
        return None
    return Path(body)


def _file_entrant_name(path: Path) -> str:
    """The name of an entrant loaded from ``path`` without ``NAME=``: the file's stem, or its
    folder's name for a run's ``average_policy.json`` / ``checkpoint.npz``."""
    return path.parent.name if path.stem in ("average_policy", "checkpoint") else path.stem


def spec_from(spec: str, directory: str | os.PathLike[str]) -> str:
    """``spec`` as it reads from any working directory, where it was written in ``directory``:
    a relative file path in it joined to ``directory``, under the name it gave the entrant
    there (a built-in, or an absolute path, is returned unchanged)."""
    path = spec_file(spec)
    if path is None or path.is_absolute():
        return spec
    name = _split_spec(spec)[0]
    return f"{name or _file_entrant_name(path)}={Path(directory) / path}"


def load_entrant(game: Game | str, spec: str) -> Entrant:
    """Build an entrant from a spec (see the module docstring); clear ValueError otherwise.
    The entrant keeps ``spec`` (:attr:`Entrant.spec`)."""
    game = load_game(game)
    name, body = _split_spec(spec)
    if not body:
        raise ValueError(f"entrant {spec!r} names no agent; write NAME=SPEC, e.g. me=uniform")
    if body == "uniform":
        return Entrant(name or "uniform", TabularPolicy.uniform(game), spec=spec)
    if body == "equilibrium":
        return Entrant(name or "equilibrium", _equilibrium(game), spec=spec)
    if body.startswith("fixed:"):
        return Entrant(name or body, _fixed_entrant(game, body), spec=spec)
    path = Path(body)
    if not path.exists():
        raise ValueError(
            f"entrant {spec!r} is neither a built-in ({', '.join(BUILTIN_ENTRANTS)}) nor an "
            "existing .json policy / .npz checkpoint / Stable-Baselines3 .zip file"
        )
    policy, trained_seat = load_policy_and_seat(path, game)
    return Entrant(name or _file_entrant_name(path), policy, trained_seat, spec)


def _fixed_entrant(game: Game, body: str) -> TabularPolicy:
    """``fixed:P1,P2,...``: one mixed strategy on every seat; ``fixed:P1,P2;Q1,Q2,Q3``: one per
    seat (a matrix game whose players have different numbers of actions)."""
    try:
        strategies = [[float(x) for x in part.split(",")] for part in body[6:].split(";")]
    except ValueError:
        raise ValueError(
            f"bad fixed strategy {body!r}: write probabilities like fixed:0.3,0.3,0.4 (one "
            "strategy for every seat) or fixed:0.5,0.5;0.2,0.3,0.5 (one per seat)"
        ) from None
    if len(strategies) == 1:
        try:
            return fixed_policy(game, strategies[0])
        except PolicyError as err:
            sizes = {int(np.count_nonzero(row)) for row in compile_tree(game).legal_mask}
            if len(sizes) > 1:  # the seats have different numbers of actions
                raise PolicyError(
                    f"{err}; the seats of {game.display_id} have different numbers of actions: "
                    "give one strategy per seat, separated by ';' (fixed:0.5,0.5;0.2,0.3,0.5)"
                ) from None
            raise
    if len(strategies) != game.num_players:
        raise ValueError(
            f"bad fixed strategy {body!r}: {len(strategies)} strategies separated by ';' for "
            f"{game.num_players} seats; give one for every seat, or one for all"
        )
    tree = compile_tree(game)
    probs, owner = np.zeros((tree.num_infosets, tree.num_actions)), tree.infoset_player
    for seat, strategy in enumerate(strategies):
        probs[owner == seat] = fixed_policy(game, strategy, seats=seat).probs[owner == seat]
    return TabularPolicy(game, probs)


@dataclass(frozen=True)
class TournamentResult:
    """Outcome of :func:`round_robin`.

    Attributes:
        game_id: the game played.
        names: entrant names, in the order given.
        exact_seat: ``[n, n, num_players]`` expected returns when entrant ``i`` holds seat 0 and
            entrant ``j`` seat 1 (so ``exact_seat[i, j, 0]`` is ``i``'s payoff).
        exact: ``[n, n]`` entrant ``i``'s expected payoff against ``j``, averaged over both seats.
        sampled: ``[n, n]`` the same from played matches (``nan`` when none were played).
        ci95: ``[n, n]`` half-width of the 95% confidence interval of ``sampled`` (from each
            seating's own spread; ``nan`` after one match per seating).
        episodes: matches played per pair and seating.
        ranking: entrant indices, best first, by mean exact payoff against the others;
            scores equal to 12 decimals (rounding noise) are a tie, ranked by name.
    """

    game_id: str
    names: tuple[str, ...]
    exact_seat: np.ndarray
    exact: np.ndarray
    sampled: np.ndarray
    ci95: np.ndarray
    episodes: int
    ranking: tuple[int, ...]

    def __repr__(self) -> str:
        return brief_repr(self)

    def __str__(self) -> str:
        return self.table()

    def score(self, i: int) -> float:
        """Entrant ``i``'s mean exact payoff against every other entrant."""
        others = [j for j in range(len(self.names)) if j != i]
        return float(np.mean(self.exact[i, others])) if others else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "game": self.game_id,
            "names": list(self.names),
            "episodes": self.episodes,
            "exact": self.exact.tolist(),
            "exact_seat0": self.exact_seat[..., 0].tolist(),
            "sampled": [[None if math.isnan(v) else v for v in row] for row in self.sampled],
            "ci95": [[None if math.isnan(v) else v for v in row] for row in self.ci95],
            "ranking": [self.names[i] for i in self.ranking],
            "scores": {self.names[i]: self.score(i) for i in range(len(self.names))},
        }

    def table(self) -> str:
        """Plain-text ranking and payoff matrix, with as many decimals as the payoffs' size
        needs (:func:`~nashzoo.eval.numbers.payoff_decimals`: three for payoffs of 1 or more)
        and columns as wide as their widest cell."""
        width = max(12, *(len(n) for n in self.names))
        spec = payoff_spec([*self.exact.ravel(), *self.sampled.ravel()])
        lines = [
            f"Ranking on {display_id(self.game_id)} (mean exact payoff against the others, both "
            "seats):"
        ]
        score_spec = payoff_spec(self.exact.ravel(), extra=1)
        for place, i in enumerate(self.ranking, 1):
            score = format_number(self.score(i), score_spec)
            lines.append(f"  {place}. {self.names[i]:<{width}} {score}")
        n = len(self.names)
        rows = [[self._cell(i, j, spec) for j in range(n)] for i in range(n)]
        column = max(26, *(len(cell) + 4 for row in rows for cell in row))
        lines.append("")
        lines.append("Payoff of row against column, exact [sampled +- 95% CI]:")
        heads = "".join(f"{name[: column - 4]:>{column}}" for name in self.names)
        lines.append(" " * (width + 2) + heads)
        for row_name, row in zip(self.names, rows, strict=True):
            lines.append(f"  {row_name:<{width}}" + "".join(f"{cell:>{column}}" for cell in row))
        return "\n".join(lines)

    def _cell(self, i: int, j: int, spec: str) -> str:
        """One cell of :meth:`table`: the exact payoff, then the sampled one and its interval
        where matches were played."""
        cell = format_number(self.exact[i, j], spec)
        if math.isnan(self.sampled[i, j]):
            return cell
        sampled = format_number(self.sampled[i, j], spec)
        if math.isnan(self.ci95[i, j]):  # one match per seating: no interval
            return f"{cell} [{sampled}]"
        return f"{cell} [{sampled}+-{format_number(self.ci95[i, j], spec.lstrip('+'))}]"


def play_matches(
    game: Game | str,
    seat_policies: Sequence[TabularPolicy],
    episodes: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Play ``episodes`` games through the public PettingZoo ``env()``; ``[episodes, players]``
    returns. Chance is seeded from ``rng``; actions are sampled from ``rng`` too."""
    game = load_game(game)
    _check_episodes(episodes)
    if len(seat_policies) != game.num_players:
        raise ValueError(
            f"{game.display_id} has {game.num_players} seats but {len(seat_policies)} seat "
            "policies were "
            "given; pass exactly one per seat"
        )
    for policy in seat_policies:
        if not callable(getattr(policy, "action_probabilities", None)):
            raise PolicyError(
                f"a seat policy must be a Policy (with action_probabilities), got "
                f"{type(policy).__name__}; wrap a function with nashzoo.eval.as_tabular"
            )
    out = np.zeros((episodes, game.num_players))
    for episode, returns in enumerate(_episodes(game, seat_policies, episodes, rng)):
        out[episode] = returns
    return out


def _episodes(
    game: Game, seat_policies: Sequence[TabularPolicy], episodes: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """The returns of ``episodes`` matches, one array per match as it ends (a tournament sums
    them as they come: no array of every match, whatever ``episodes`` is). A game that chance
    ends before anyone moves is a match too: the env draws again at ``reset()`` (PettingZoo's
    agents are live after it), and its returns come from ``last_zero_move_returns``, so the
    mean is the game's expected return, not the return given that someone moves."""
    from nashzoo.envs.aec import GameAECEnv, wrap_env

    raw = GameAECEnv(game)
    env = wrap_env(raw)
    names = list(env.possible_agents)
    index = {a: p for p, a in enumerate(names)}
    played = 0
    while played < episodes:
        if played:
            env.reset()
        else:
            env.reset(seed=int(rng.integers(2**31)))
        for paid in raw.last_zero_move_returns:
            yield np.asarray(paid, dtype=np.float64)
            played += 1
            if played == episodes:
                env.close()
                return
        returns = np.zeros(len(names))
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                # Rewards come only at the end, so the cumulative reward is the return.
                returns[index[agent]] = reward
                env.step(None)
                continue
            player = index[agent]
            infoset = Infoset.from_observation(obs, player, info["infoset_key"], game.num_actions)
            probs = seat_policies[player].action_probabilities(infoset)
            env.step(sample_action(probs, rng))
        yield returns
        played += 1
    env.close()


@dataclass(frozen=True)
class Pairing:
    """What one pairing gives: entrant ``row`` in seat 0 against entrant ``col`` in seat 1.

    Attributes:
        row, col: the entrants' indices.
        exact: the expected returns of seat 0 and seat 1, from the tree.
        mean: seat 0's mean payoff over the sampled matches, seat 1's, and the mean of the two
            (match by match); ``None`` when no match was played.
        variance: the unbiased variance of one match's payoff, in the same order (``nan``
            after one match); ``None`` when no match was played.
    """

    row: int
    col: int
    exact: tuple[float, float]
    mean: tuple[float, float, float] | None = None
    variance: tuple[float, float, float] | None = None


def pairing_rng(seed: int, row: int, col: int) -> np.random.Generator:
    """The random stream of the matches of entrant ``row`` (seat 0) against ``col`` (seat 1):
    a function of the seed and the two places alone (``SeedSequence(seed, spawn_key=(row,
    col))``), so a pairing plays the same matches whichever pairings were played before it, or
    whether they were played in this process at all (a resumed tournament)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(row, col)))


def play_pairing(
    game: Game | str, entrants: Sequence[Entrant], row: int, col: int, episodes: int, seed: int
) -> Pairing:
    """Entrant ``row`` in seat 0 against entrant ``col`` in seat 1: the exact expected returns,
    and ``episodes`` matches sampled from :func:`pairing_rng`."""
    game = load_game(game)
    joint = [entrants[row].policy, entrants[col].policy]
    exact = expected_returns(game, joint)
    pairing = Pairing(row, col, (float(exact[0]), float(exact[1])))
    if episodes == 0:
        return pairing
    mean, variance = _moments(_episodes(game, joint, episodes, pairing_rng(seed, row, col)))
    return dataclasses.replace(
        pairing,
        mean=(float(mean[0]), float(mean[1]), float(mean[2])),
        variance=(float(variance[0]), float(variance[1]), float(variance[2])),
    )


def all_pairings(n: int) -> list[tuple[int, int]]:
    """Every pairing of ``n`` entrants, each on both seats and each against itself, in the
    order a tournament plays them."""
    return [(i, j) for i in range(n) for j in range(n)]


def round_robin(
    game: Game | str,
    entrants: Sequence[Entrant],
    *,
    episodes: int = 0,
    seed: int = 0,
    progress: bool = False,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    force: bool = False,
) -> TournamentResult:
    """Every pair of entrants on both seats: exact payoffs, and ``episodes`` sampled matches per
    pair and seating when ``episodes > 0``. Each pairing's matches are seeded on their own
    (:func:`pairing_rng`).

    With ``out``, a folder, each pairing is written there as it finishes, and the whole table
    (``tournament.json``) at the end (:mod:`nashzoo.eval.tournament_folder`): an interrupted
    tournament keeps its finished pairings, and the same call with ``resume=True`` plays only
    the missing ones, giving the uninterrupted tournament's result. A folder that holds a
    tournament already is refused unless ``resume`` (the same tournament: another game,
    entrants, ``episodes`` or ``seed`` is refused) or ``force`` (start over); it is locked
    while the tournament plays. ``resume`` may also add entrants after the stored ones
    (unchanged, in the same order): only the pairings with a new entrant are played, and the
    result is the one of the whole list played at once. With ``progress``, a resume says what
    it keeps and adds, on stderr. The folder stores the entrants' specs where each came from
    :func:`load_entrant`, so ``nashzoo tournament --out DIR --resume`` can take it up."""
    game = load_game(game)
    check_entrants(game, entrants)
    _check_episodes(episodes)
    if out is None and (resume or force):
        raise ValueError("resume and force are about a tournament's folder: give out=FOLDER")
    if out is not None:
        from nashzoo.eval.tournament_folder import open_tournament

        with open_tournament(
            out, game, entrants, episodes=episodes, seed=seed, resume=resume, force=force
        ) as tournament:
            if progress and tournament.resumed:
                print(tournament.resume_note(), file=sys.stderr)
            return tournament.play(progress=progress)
    pairs = all_pairings(len(entrants))
    bar = None
    if progress:
        bar = progress_bar(total=len(pairs), desc="tournament", unit="pairing")
    played = {}
    try:
        for i, j in pairs:
            played[i, j] = play_pairing(game, entrants, i, j, episodes, seed)
            if bar is not None:
                bar.update()
    finally:  # closed on Ctrl-C too: the caller's message then starts a line of its own
        if bar is not None:
            bar.close()
    return assemble(game, [entrant.name for entrant in entrants], played, episodes)


def assemble(
    game: Game | str,
    names: Sequence[str],
    pairings: dict[tuple[int, int], Pairing],
    episodes: int,
) -> TournamentResult:
    """The tournament of ``names`` from every one of its pairings, in whatever order they were
    played (they are summed in the order of :func:`all_pairings`)."""
    game = load_game(game)
    n = len(names)
    exact_seat = np.zeros((n, n, 2))
    mean = np.zeros((n, n)) if episodes else np.full((n, n), np.nan)
    variance = np.zeros((n, n)) if episodes else np.full((n, n), np.nan)  # of the mean
    for i, j in all_pairings(n):
        pairing = pairings[i, j]
        exact_seat[i, j] = pairing.exact
        if episodes == 0:
            continue
        seat_mean, seat_var = pairing.mean, pairing.variance
        if seat_mean is None or seat_var is None:
            raise ValueError(f"pairing {i}-{j} played no matches; the tournament has {episodes}")
        if i == j:  # both seats of the same matches: their mean, match by match
            mean[i, i], variance[i, i] = seat_mean[2], seat_var[2] / episodes
            continue
        for me, other, seat in ((i, j, 0), (j, i, 1)):  # each seating is half of the cell
            mean[me, other] += 0.5 * seat_mean[seat]
            variance[me, other] += 0.25 * seat_var[seat] / episodes
    # exact[i, j]: i's payoff against j averaged over i in seat 0 and i in seat 1.
    exact = 0.5 * (exact_seat[:, :, 0] + exact_seat[:, :, 1].T)
    ci95 = 1.96 * np.sqrt(variance)
    scores = [float(np.mean([exact[i, j] for j in range(n) if j != i])) for i in range(n)]
    ranking = rank_by(scores, names, scale=compile_tree(game).largest_payoff)
    for array in (exact_seat, exact, mean, ci95):
        array.setflags(write=False)
    return TournamentResult(
        game_id=game.id,
        names=tuple(names),
        exact_seat=exact_seat,
        exact=exact,
        sampled=mean,
        ci95=ci95,
        episodes=episodes,
        ranking=ranking,
    )


def _check_episodes(episodes: Any) -> None:
    if not is_whole_number(episodes):
        raise ValueError(f"episodes must be a non-negative integer, got {episodes!r}")


def _check_entrant_types(entrants: Sequence[Any]) -> None:
    """Every entrant is an :class:`Entrant`: a spec string such as ``"equilibrium"`` passed
    straight to :func:`round_robin` is refused with the call that builds it (it failed with
    ``AttributeError: 'str' object has no attribute 'name'``)."""
    for index, entrant in enumerate(entrants):
        if not isinstance(entrant, Entrant):
            build = (
                f"load_entrant(game, {entrant!r})"
                if isinstance(entrant, str)
                else "Entrant(name, policy) or load_entrant(game, spec)"
            )
            raise TypeError(
                f"entrant {index} is a {type(entrant).__name__}, not an Entrant: build it with "
                f"{build} (nashzoo.eval.tournament)"
            )


def check_entrants(game: Game, entrants: Sequence[Entrant]) -> None:
    """Raise unless ``game`` is two-player and ``entrants`` are at least two, uniquely named,
    all playing ``game`` (what :func:`round_robin` checks first; the command line checks it
    before it makes the ``--out`` folder)."""
    if game.num_players != 2:
        raise ValueError(
            f"tournaments are two-player; {game.display_id} has {game.num_players} players"
        )
    if len(entrants) < 2:
        raise ValueError("a tournament needs at least two entrants")
    _check_entrant_types(entrants)
    names = [entrant.name for entrant in entrants]
    if len(set(names)) != len(names):
        raise ValueError(f"entrant names must be unique, got {names}; name them with NAME=SPEC")
    for entrant in entrants:
        if not isinstance(entrant.policy, TabularPolicy):
            raise PolicyError(
                f"entrant {entrant.name!r} holds a {type(entrant.policy).__name__}, not a "
                "TabularPolicy; make one with nashzoo.eval.as_tabular(game, policy)"
            )
        if entrant.policy.game.id != game.id:
            theirs, ours = display_ids_apart(entrant.policy.game.id, game.id)
            raise PolicyError(f"entrant {entrant.name!r} plays {theirs}, not {ours}")


def _moments(episodes: Iterator[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and unbiased variance of seat 0's payoff, seat 1's, and their mean, over the
    matches (Welford's update: no cancellation when payoffs are large and alike). The variance
    is ``nan`` after one match: one payoff says nothing about the spread."""
    count, mean, m2 = 0, np.zeros(3), np.zeros(3)
    for returns in episodes:
        x = np.array([returns[0], returns[1], 0.5 * (returns[0] + returns[1])])
        count += 1
        delta = x - mean
        mean += delta / count
        m2 += delta * (x - mean)
    return mean, (m2 / (count - 1) if count > 1 else np.full(3, np.nan))
