"""A tournament's folder (``round_robin(..., out=DIR)``, ``nashzoo tournament --out DIR``):
every pairing is kept as it finishes, so an interrupted tournament loses only the pairing it was
playing, and a resumed one plays only the pairings still missing.

The folder holds:

``tournament_config.json``
    what the tournament is: the game, the entrants in order (each one's name and the SHA-256 of
    its policy's table), ``episodes`` and ``seed``; written before the first pairing plays.
    Beside them, ``specs``: each entrant's spec as it was typed (``uniform``,
    ``me=runs/cfr/average_policy.json``, ...), when the tournament was given them (the command
    line always is; in Python, when every entrant came from
    :func:`~nashzoo.eval.tournament.load_entrant`, which keeps its spec), and
    ``working_directory``, the folder a relative path in them is relative to, so ``nashzoo
    tournament --out DIR --resume`` can rebuild the entrants from any working directory without
    their being typed again. The specs are not part of what makes two tournaments the same one
    (a policy file is checked by its table's SHA-256, whatever path reaches it); a resume that
    is given specs stores them in place of the earlier ones. ``specs`` is ``null`` where the
    tournament was started (or grown) from Python with an entrant that has no spec, and absent
    from a folder written before specs were stored: then the entrants must be typed to resume.
``pairings/ROW-COL.json``
    one per finished pairing (entrant ROW in seat 0, entrant COL in seat 1), written atomically
    when it finishes: its exact returns, and the means and variances of its sampled matches
    (every float written in full, so it reads back bit for bit), with the checksum of the
    config it belongs to and one of its own.
``tournament.json``
    the whole table, once every pairing has played (and ``tournament_heatmap.png``, which the
    command line draws).

A pairing's matches come from a random stream of its own
(:func:`~nashzoo.eval.tournament.pairing_rng`), so a tournament finished over several runs gives
the table of one uninterrupted run with the same seed, file for file.

The rules, as for the folders of ``nashzoo train`` and ``race``:

* the folder is validated before any work and locked while a tournament plays and writes it
  (:func:`~nashzoo.io.folder_lock`; a second writer is refused at once);
* a folder that already holds a tournament is refused unless it is resumed (``resume``: the
  finished pairings are kept) or replaced (``force``: its tournament files are deleted first);
* a resume must be the same tournament: another game, other entrants (names, order, or a
  policy that changed since), other ``episodes`` or another ``seed`` is refused with the
  differences named; a damaged ``tournament_config.json`` is refused too (its pairings could not
  be checked against anything);
* except that a resume may add entrants after the stored ones (unchanged, in the same order):
  the tournament grows. Only the pairings with a new entrant in a seat are played (an entrant's
  place is the same in both lists, so every earlier pairing, seeded by the places, is the one
  the larger tournament plays); the earlier pairing files are kept as they are (a pairing file
  names the config of the tournament that wrote it, and a config of the first entrants of this
  one, with the same game, episodes and seed, is accepted), the config grows, and the earlier
  ``tournament.json`` and heatmap go until the larger table is written: the one a fresh run of
  the whole list writes, byte for byte;
* a pairing file that is damaged, edited (its checksum) or left by another tournament is not
  trusted: that pairing is played again, with a warning naming the file (it plays the same
  matches, so the table is the same).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nashzoo.eval.tournament import (
    Entrant,
    Pairing,
    TournamentResult,
    _check_episodes,
    all_pairings,
    assemble,
    check_entrants,
    play_pairing,
)
from nashzoo.games import Game
from nashzoo.games.base import display_id, is_finite_number, is_whole_number
from nashzoo.games.progress import progress_bar
from nashzoo.io import (
    FileFormatError,
    atomic_write_bytes,
    check_output_folder,
    folder_lock,
    read_json,
    remove_stale_temp_files,
)
from nashzoo.io.fields import check_format, field, number, version_stamp
from nashzoo.io.folder_kinds import refuse_other_kinds

TOURNAMENT_FORMAT = "nashzoo.Tournament/1"
PAIRING_FORMAT = "nashzoo.TournamentPairing/1"
CONFIG_FILE = "tournament_config.json"
PAIRINGS_FOLDER = "pairings"
RESULT_FILE = "tournament.json"
HEATMAP_FILE = "tournament_heatmap.png"
TOURNAMENT_FILES = (CONFIG_FILE, PAIRINGS_FOLDER, RESULT_FILE, HEATMAP_FILE)
"""What a tournament writes in its folder (what ``force`` deletes, and what marks a folder as
holding one)."""


class TournamentFolderError(FileFormatError):
    """A tournament folder that cannot be used as asked (the message says why and what to do)."""


def _digest(payload: dict[str, Any]) -> str:
    """SHA-256 of ``payload`` without its ``checksum`` field (canonical JSON)."""
    body = {k: v for k, v in payload.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def config_digest(config: dict[str, Any]) -> str:
    """The checksum a pairing file names its tournament by: that of what makes the tournament
    (:func:`tournament_config`), whatever else its stored config holds beside (its specs)."""
    keys = ("format", "game", "entrants", "episodes", "seed")
    return _digest({key: config[key] for key in keys if key in config})


def policy_digest(entrant: Entrant) -> str:
    """SHA-256 of the entrant's policy table (what tells a policy file changed since)."""
    table = np.ascontiguousarray(entrant.policy.probs, dtype="<f8")
    return hashlib.sha256(table.tobytes()).hexdigest()


def tournament_config(
    game: Game, entrants: Sequence[Entrant], episodes: int, seed: int
) -> dict[str, Any]:
    """The contents of ``tournament_config.json``: what makes two tournaments the same one."""
    return {
        "format": TOURNAMENT_FORMAT,
        "game": game.id,
        "entrants": [{"name": e.name, "policy_sha256": policy_digest(e)} for e in entrants],
        "episodes": int(episodes),
        "seed": int(seed),
    }


def _differences(wanted: dict[str, Any], stored: dict[str, Any]) -> list[str]:
    """How the tournament asked for differs from the one stored, in the options' words."""
    found = []
    if wanted["game"] != stored["game"]:
        found.append(
            f"--game {display_id(wanted['game'])} (the tournament has {display_id(stored['game'])})"
        )
    names = [e["name"] for e in wanted["entrants"]]
    stored_names = [e["name"] for e in stored["entrants"]]
    if names != stored_names:
        found.append(
            f"the entrants {', '.join(names)} (the tournament has {', '.join(stored_names)}, in "
            "this order)"
        )
    elif wanted["game"] == stored["game"]:
        found += [
            f"entrant {new['name']!r} with another policy than when the tournament started "
            "(its file changed since?)"
            for new, old in zip(wanted["entrants"], stored["entrants"], strict=True)
            if new["policy_sha256"] != old["policy_sha256"]
        ]
    for key in ("episodes", "seed"):
        if wanted[key] != stored[key]:
            found.append(f"--{key} {wanted[key]} (the tournament has {stored[key]})")
    return found


def resume_refusal(
    folder: str | os.PathLike[str], differences: list[str], stored: dict[str, Any]
) -> TournamentFolderError:
    """The refusal of a resume that is not the tournament ``stored`` in ``folder`` (nor that
    tournament with entrants added after its own)."""
    return TournamentFolderError(
        f"--resume continues the tournament in {folder} as it was started, but this one has "
        + "; ".join(differences)
        + ": give the entrants and options it was started with"
        + (
            " (or none of them: nashzoo tournament --out DIR --resume takes the stored ones)"
            if stored.get("specs") is not None
            else ""
        )
        + "; new entrants may follow its own, in the same order (the tournament grows); or "
        "start a new tournament (--force, or another --out)"
    )


def game_difference(game: Game, stored: dict[str, Any]) -> list[str]:
    """``--game`` as :func:`resume_refusal` names it, where ``game`` is not the stored one."""
    return _differences({**stored, "game": game.id}, stored)


def _read_config(path: Path) -> dict[str, Any]:
    """The stored ``tournament_config.json``, every field checked."""
    name = str(path)
    payload = read_json(path, "tournament config", TournamentFolderError)
    refusal = f"{name} is not a nashzoo tournament config (format tag)"
    check_format(payload, TOURNAMENT_FORMAT, name, refusal, TournamentFolderError)
    field(payload, "game", str, name, TournamentFolderError)
    entrants = field(payload, "entrants", list, name, TournamentFolderError)
    for k, entrant in enumerate(entrants):
        at = f"{name}: entrants[{k}]"
        if not isinstance(entrant, dict):
            raise TournamentFolderError(f"{at} must be a mapping")
        field(entrant, "name", str, at, TournamentFolderError)
        field(entrant, "policy_sha256", str, at, TournamentFolderError)
    for key in ("episodes", "seed"):
        number(payload, key, name, TournamentFolderError, integer=True, minimum=0)
    specs = payload.get("specs")
    if specs is not None and not (
        isinstance(specs, list)
        and len(specs) == len(entrants)
        and all(isinstance(spec, str) for spec in specs)
    ):
        raise TournamentFolderError(
            f"{name}: field 'specs' must be one string per entrant ({len(entrants)})"
        )
    directory = payload.get("working_directory")
    if directory is not None and not (isinstance(directory, str) and Path(directory).is_absolute()):
        raise TournamentFolderError(f"{name}: field 'working_directory' must be an absolute path")
    return payload


def stored_tournament(out: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``tournament_config.json`` stored in ``out``, every field checked (its ``specs``,
    each entrant's spec as typed, absent from a folder written before they were stored and
    ``None`` where an entrant given in Python had none; its ``working_directory``, where
    relative paths in them lead from), or ``None`` when ``out`` holds none."""
    path = Path(out) / CONFIG_FILE
    if not path.exists():
        return None
    try:
        return _read_config(path)
    except TournamentFolderError as err:
        raise TournamentFolderError(
            f"{err}; its pairings cannot be checked against anything: start over with --force "
            "(or choose another --out)"
        ) from None


def _floats(payload: dict[str, Any], key: str, size: int, where: str, *, nan: bool) -> Any:
    """A list of ``size`` finite numbers (``null`` read as ``nan`` where ``nan``)."""
    values = field(payload, key, list, where, TournamentFolderError)
    ok = len(values) == size and all((v is None and nan) or is_finite_number(v) for v in values)
    if not ok:
        raise TournamentFolderError(f"{where}: field {key!r} must be {size} finite numbers")
    return tuple(float("nan") if v is None else float(v) for v in values)


def _pairing_payload(pairing: Pairing, names: Sequence[str], config_digest: str) -> bytes:
    payload: dict[str, Any] = {
        "format": PAIRING_FORMAT,
        **version_stamp(),
        "tournament": config_digest,
        "row": pairing.row,
        "col": pairing.col,
        "row_name": names[pairing.row],
        "col_name": names[pairing.col],
        "exact": list(pairing.exact),
        "mean": None if pairing.mean is None else list(pairing.mean),
        "variance": None
        if pairing.variance is None
        else [None if np.isnan(v) else v for v in pairing.variance],
    }
    payload["checksum"] = _digest(payload)
    return json.dumps(payload, indent=1).encode()


def _read_pairing(
    path: Path,
    row: int,
    col: int,
    names: Sequence[str],
    config: dict[str, Any],
    accepted: Collection[str] | None = None,
) -> Pairing:
    """The pairing stored at ``path``, if it is this tournament's pairing ROW-COL, whole: its
    file names the checksum of ``config``, or one in ``accepted`` (those of the tournaments this
    one grew from, which played the same pairing)."""
    where = str(path)
    payload = read_json(path, "tournament pairing", TournamentFolderError)
    refusal = f"{where} is not a nashzoo tournament pairing (format tag)"
    check_format(payload, PAIRING_FORMAT, where, refusal, TournamentFolderError)
    if payload.get("checksum") != _digest(payload):
        raise TournamentFolderError(f"{where}: its checksum does not match its contents (edited?)")
    tournament = payload.get("tournament")
    wanted = {config_digest(config)} if accepted is None else accepted
    if not isinstance(tournament, str) or tournament not in wanted:
        raise TournamentFolderError(f"{where} is a pairing of another tournament")
    expected = {"row": row, "col": col, "row_name": names[row], "col_name": names[col]}
    if any(payload.get(k) != v for k, v in expected.items()):
        raise TournamentFolderError(f"{where} holds another pairing than {row}-{col}")
    exact = _floats(payload, "exact", 2, where, nan=False)
    if config["episodes"] == 0:
        return Pairing(row, col, exact)
    mean = _floats(payload, "mean", 3, where, nan=False)
    variance = _floats(payload, "variance", 3, where, nan=True)
    if any(v < 0 for v in variance):
        raise TournamentFolderError(f"{where}: field 'variance' holds a negative number")
    return Pairing(row, col, exact, mean, variance)


class TournamentFolder:
    """A tournament played into a locked folder (see the module docstring); made by
    :func:`open_tournament`, which claims the folder first.

    Attributes:
        folder: the folder.
        pairings: the finished pairings, by ``(row, col)``: those kept from an earlier run,
            then each one as it finishes and is written.
        resumed: whether the folder held this tournament already (``resume``), or the one
            it grows.
        added: the names of the entrants this resume adds after the stored ones (the
            tournament grows), else empty.
        kept: how many pairings were kept from an earlier run.
        total: how many the tournament has (every entrant against every one, itself included,
            on both seats).
    """

    def __init__(
        self,
        folder: Path,
        game: Game,
        entrants: Sequence[Entrant],
        episodes: int,
        seed: int,
        specs: Sequence[str] | None = None,
        directory: str | os.PathLike[str] | None = None,
    ) -> None:
        if specs is not None and len(specs) != len(entrants):
            raise ValueError(f"{len(specs)} specs for {len(entrants)} entrants: give one each")
        if specs is None and all(entrant.spec is not None for entrant in entrants):
            specs = [str(entrant.spec) for entrant in entrants]  # each came from load_entrant
        self.folder = folder
        self.specs = None if specs is None else [str(spec) for spec in specs]
        self.directory = str(Path(os.getcwd() if directory is None else directory).absolute())
        self.game = game
        self.entrants = list(entrants)
        self.names = [entrant.name for entrant in entrants]
        self.episodes = episodes
        self.seed = seed
        self.config = tournament_config(game, entrants, episodes, seed)
        self.pairings: dict[tuple[int, int], Pairing] = {}
        self.resumed = False
        self.added: list[str] = []
        self.kept = 0
        self.total = len(all_pairings(len(entrants)))

    def _path(self, row: int, col: int) -> Path:
        return self.folder / PAIRINGS_FOLDER / f"{row}-{col}.json"

    def existing_files(self) -> list[str]:
        """The tournament files already in the folder."""
        return [name for name in TOURNAMENT_FILES if (self.folder / name).exists()]

    def claim(self, *, resume: bool, force: bool) -> None:
        """Start the tournament in the folder (refusing one already there unless ``force``,
        which deletes it), or with ``resume`` take up the one there, keeping its finished
        pairings; then store the config."""
        refuse_other_kinds(self.folder, "tournament", TournamentFolderError)
        existing = self.existing_files()
        if resume and CONFIG_FILE in existing:
            self._take_up()
            return
        if resume and existing:
            raise TournamentFolderError(
                f"{self.folder} holds {', '.join(existing)} but no {CONFIG_FILE} (written by "
                "an older nashzoo, or left incomplete): there is no tournament to resume; "
                "start over with --force, or choose another --out"
            )
        if existing and not force:
            finish = (
                "finish it with --resume (finished pairings are kept), "
                if CONFIG_FILE in existing
                else ""  # an older nashzoo's tournament.json: nothing to resume
            )
            raise TournamentFolderError(
                f"{self.folder} already holds a tournament ({', '.join(existing)}); {finish}"
                "start over with --force, or choose another --out"
            )
        (self.folder / CONFIG_FILE).unlink(missing_ok=True)  # first: pairings without it
        shutil.rmtree(self.folder / PAIRINGS_FOLDER, ignore_errors=True)  # are never resumed
        for name in (RESULT_FILE, HEATMAP_FILE):
            (self.folder / name).unlink(missing_ok=True)
        self._write_config()

    def _write_config(self) -> None:
        """Store the config, with the entrants' specs and the directory their relative paths
        lead from where every entrant has a spec, else ``"specs": null`` (no entrant is lost:
        the command line then says to type them)."""
        where: dict[str, Any] = {"specs": None}
        if self.specs is not None:
            where = {"specs": self.specs, "working_directory": self.directory}
        payload = {**self.config, **version_stamp(), **where}
        atomic_write_bytes(self.folder / CONFIG_FILE, json.dumps(payload, indent=1).encode())

    def _accepted(self) -> list[set[str]]:
        """For each pairing's ``max(row, col)``, the config checksums its file may name: this
        tournament's, and those of its first ``k`` entrants for every ``k`` that holds both
        (a tournament it grew from, with the same game, episodes and seed: the same pairing)."""
        digests = [
            config_digest({**self.config, "entrants": self.config["entrants"][:k]})
            for k in range(1, len(self.entrants) + 1)
        ]
        return [set(digests[top:]) for top in range(len(self.entrants))]

    def _take_up(self) -> None:
        """Check the stored tournament is this one, and keep its intact pairings."""
        path = self.folder / CONFIG_FILE
        try:
            stored = _read_config(path)
        except TournamentFolderError as err:
            raise TournamentFolderError(
                f"{err}; its pairings cannot be checked against this tournament: start over "
                "with --force (or choose another --out)"
            ) from None
        old = len(stored["entrants"])
        stored_names = [entrant["name"] for entrant in stored["entrants"]]
        grows = len(self.names) > old and self.names[:old] == stored_names
        wanted = self.config  # when it grows: its first entrants must be the stored ones
        if grows:
            wanted = {**self.config, "entrants": self.config["entrants"][:old]}
        differences = _differences(wanted, stored)
        if differences:
            raise resume_refusal(self.folder, differences, stored)
        accepted = self._accepted()
        for row, col in all_pairings(len(self.entrants)):
            path = self._path(row, col)
            if not path.exists():
                continue
            try:
                self.pairings[row, col] = _read_pairing(
                    path, row, col, self.names, self.config, accepted[max(row, col)]
                )
            except TournamentFolderError as err:
                warnings.warn(
                    f"{err}: playing {self.names[row]} vs {self.names[col]} again",
                    stacklevel=2,
                )
        if grows:
            self.added = self.names[old:]
            for name in (RESULT_FILE, HEATMAP_FILE):  # the smaller table: no longer this one's
                (self.folder / name).unlink(missing_ok=True)
            self._write_config()
        elif self.specs is not None and self._specs_differ(stored):
            self._write_config()  # the same tournament, its entrants given anew: keep how
        self.resumed = True
        self.kept = len(self.pairings)

    def _specs_differ(self, stored: dict[str, Any]) -> bool:
        """Whether the specs given (or where their paths lead from) differ from the stored."""
        return (stored.get("specs"), stored.get("working_directory")) != (
            self.specs,
            self.directory,
        )

    def resume_note(self) -> str:
        """What a resume does, in one line: the pairings kept and those left to play, and on a
        tournament that grows, the entrants added and the pairings that brings."""
        left = self.total - self.kept
        if not self.added:
            return (
                f"resuming the tournament in {self.folder}/: {self.kept} of {self.total} "
                "pairings already played" + (f", {left} to play" if left else "")
            )
        count = len(self.added)
        new = self.total - len(all_pairings(len(self.entrants) - count))
        return (
            f"adding {count} entrant{'s' if count > 1 else ''} ({', '.join(self.added)}) to the "
            f"tournament in {self.folder}/: {new} new pairings; {self.kept} kept"
            + (f", {left} to play" if left != new else "")
        )

    def _keep(self, pairing: Pairing, data: bytes) -> None:
        """Write ``pairing``'s file and count it as kept: also when an interruption lands
        after the file was renamed into place (the count said one pairing fewer than the
        folder held), never when it lands before."""
        path = self._path(pairing.row, pairing.col)
        try:  # not flushed to disk: a file a power cut damaged is played again on resume
            atomic_write_bytes(path, data, durable=False)
        except BaseException:
            if path.exists() and path.read_bytes() == data:
                self.pairings[pairing.row, pairing.col] = pairing
            raise
        self.pairings[pairing.row, pairing.col] = pairing

    def play(self, *, progress: bool = False) -> TournamentResult:
        """Play every pairing still missing, writing each one as it finishes, then write
        ``tournament.json``; the whole tournament's result."""
        missing = [p for p in all_pairings(len(self.entrants)) if p not in self.pairings]
        bar = None
        if progress and missing:
            bar = progress_bar(
                total=self.total, initial=self.kept, desc="tournament", unit="pairing"
            )
        digest = config_digest(self.config)
        try:
            for row, col in missing:
                pairing = play_pairing(self.game, self.entrants, row, col, self.episodes, self.seed)
                self._keep(pairing, _pairing_payload(pairing, self.names, digest))
                if bar is not None:
                    bar.update()
        finally:
            if bar is not None:
                bar.close()
        result = assemble(self.game, self.names, self.pairings, self.episodes)
        atomic_write_bytes(
            self.folder / RESULT_FILE, json.dumps(result.to_dict(), indent=1).encode()
        )
        return result


@contextlib.contextmanager
def open_tournament(
    out: str | os.PathLike[str],
    game: Game,
    entrants: Sequence[Entrant],
    *,
    episodes: int,
    seed: int,
    resume: bool = False,
    force: bool = False,
    specs: Sequence[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
) -> Iterator[TournamentFolder]:
    """The tournament in ``out``, claimed (see :meth:`TournamentFolder.claim`) and locked for
    the ``with`` block; temporary files a killed tournament left there are removed first.
    Entrants, ``episodes`` and ``seed`` are checked before the folder is made. ``specs``, each
    entrant's spec as typed (for :func:`~nashzoo.eval.tournament.load_entrant`; by default the
    entrants' own :attr:`~nashzoo.eval.tournament.Entrant.spec`, where each has one), are stored
    in the config with ``directory``, the working directory their relative paths lead from (by
    default the current one), so the tournament can be resumed from the folder alone (see
    :func:`stored_tournament`); without them a resume keeps the stored ones. Entrants added
    after the stored ones grow the tournament (see the module docstring)."""
    check_entrants(game, entrants)
    _check_episodes(episodes)
    if resume and force:
        raise ValueError(
            "resume continues the tournament in the folder, force replaces it: choose one"
        )
    if seed is None or not is_whole_number(seed):
        raise ValueError(
            f"a tournament kept in a folder needs a seed that is a non-negative integer (its "
            f"pairings are replayed from it), got {seed!r}"
        )
    folder = check_output_folder(out)
    with folder_lock(folder, "--out folder"):
        remove_stale_temp_files(folder)
        tournament = TournamentFolder(folder, game, entrants, episodes, seed, specs, directory)
        tournament.claim(resume=resume, force=force)
        yield tournament
