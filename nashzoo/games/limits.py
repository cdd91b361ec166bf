"""How big a tree this process may compile: a game too big for the machine is refused with one
line, before it takes the machine's memory, instead of swapping or being killed.

Two limits, checked before a compile when the game counts its histories without enumerating
them (``Game.num_histories()``, Liar's dice does), and while a walk enumerates them (the fast
walk, the checking walk; see :class:`~nashzoo.games.progress.WalkProgress`):

* **memory**: a walk stops once the process has grown by :data:`MEMORY_SHARE` of the memory
  that was available at its first look (Linux's ``MemAvailable``, read after about a thousand
  histories, so a small game's walk never reads it), leaving the rest for the
  layout that follows and a learner's tables; a game that counts itself is refused up front
  when :data:`BYTES_PER_HISTORY` per history would not fit in that share. Deep games fill the
  memory with the walk's stack of pending states long before their histories add up (OpenSpiel's
  chess took 3 GB within its first 65,000 histories), which is why the walk watches the
  process, not a count. Where the available memory cannot be read (not Linux), only the cap
  below applies.
* **a cap** on histories, set by the environment variable :data:`MAX_HISTORIES_VARIABLE`
  (unset: none), for a shared machine or a job that should give up early, or for one block of
  code by :func:`history_cap` (a caller that wants a tree only when it is quick to make, as
  ``nashzoo games`` does to count a game's information sets); the smaller of the two applies.

A walk that reaches :data:`ESTIMATE_AFTER` histories, or has walked for
:data:`ESTIMATE_AFTER_SECONDS`, also estimates the whole tree's size from a sample of random
paths (:func:`sampled_size`, Knuth's estimator) and stops at once where that many histories, at
the memory per history the walk has used so far, would need more than :data:`ESTIMATE_MARGIN`
times its share of the memory: OpenSpiel's 3x3 ``dark_hex`` (some 1e10 histories) otherwise
walked for half an hour before the memory limit stopped it, and its chess, some 4,000 histories
a second, for four minutes and 9 GB before reaching a million.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import random
import re
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from nashzoo.games import checks
from nashzoo.games.base import CHANCE, TERMINAL, Game, GameTooLarge, display_id

MEMORY_SHARE = 0.6
"""The share of the memory available early in a walk (at its first look) that it may take."""

BYTES_PER_HISTORY = 200
"""The peak memory of a compile per history, for the check made before compiling a game that
counts itself: the ladder in BENCHMARKS.md measures 78-132 bytes a history (rungs 2-5), and
this leaves room above it."""

ESTIMATE_AFTER = 1_000_000
"""A walk that has visited this many histories estimates the tree's size (:func:`sampled_size`)."""

ESTIMATE_AFTER_SECONDS = 10.0
"""A walk that has taken this long estimates the tree's size, however few histories it has
visited (a slow game's: the estimate's two seconds are then a fifth of the walk so far)."""

ESTIMATE_MARGIN = 10.0
"""A walk stops early only where the estimated tree would need this many times the memory it
may take, so a game it stops is far too big, not a borderline one: the estimate is a mean over
random paths, unbiased but noisy on uneven trees (means of 64 paths under 20 seeds: on Liar's
dice the worst was 3.7 times the true size; on Leduc, Kuhn, tic-tac-toe and 13-rank Leduc within
1.5 times)."""

SAMPLED_PATHS = 256
"""Random paths behind one :func:`sampled_size` (fewer where they take over two seconds)."""

MAX_HISTORIES_VARIABLE = "NASHZOO_MAX_HISTORIES"
"""The environment variable that caps the histories of one compile (a positive integer)."""


_EXACT_BELOW = 10**15
"""Counts below this are written in full (``6,412,351,813``), bigger ones like ``6.41e+15``."""


def _count(n: float) -> str:
    """``n`` with thousands separators, or, from :data:`_EXACT_BELOW` on, with three significant
    digits and an exponent: a counted game may have hundreds of digits of histories (Liar's dice
    with 30 dice of 30 sides each: 631), too many to read or, past 4,300, even to print."""
    if n < _EXACT_BELOW:
        return f"{n:,}" if isinstance(n, int) else f"{n:,.0f}"
    exponent = math.floor(math.log10(n))  # exact enough for three digits, however big ``n`` is
    mantissa = 10 ** (math.log10(n) - exponent)
    if round(mantissa, 2) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.2f}e+{exponent}"


def _size(nbytes: float) -> str:
    """``nbytes`` in GiB, or MiB below one GiB (one decimal below 100, none above)."""
    if nbytes >= _EXACT_BELOW * 2**30:  # an int this big may not fit a float
        return f"{_count(nbytes // 2**30)} GiB"
    value, unit = (nbytes / 2**30, "GiB") if nbytes >= 2**30 else (nbytes / 2**20, "MiB")
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def max_histories() -> int | None:
    """The cap set by :data:`MAX_HISTORIES_VARIABLE`, or ``None`` when it is unset."""
    text = os.environ.get(MAX_HISTORIES_VARIABLE, "").strip()
    if not text:
        return None
    try:
        cap = int(text.replace("_", ""))
    except ValueError:
        cap = 0
    if cap <= 0:
        raise ValueError(
            f"{MAX_HISTORIES_VARIABLE}={text!r} is not a positive whole number of histories; "
            "set it like 50000000, or unset it for no cap"
        )
    return cap


_BLOCK_CAP: ContextVar[tuple[int, float | None] | None] = ContextVar(
    "nashzoo_history_cap", default=None
)
"""The histories and seconds set by :func:`history_cap` for the code running now."""

_BLOCK_CAP_NAME = "nashzoo.games.limits.history_cap"

_clock = time.monotonic
"""The clock :func:`history_cap`'s seconds are measured on."""


@contextlib.contextmanager
def history_cap(histories: int, seconds: float | None = None) -> Iterator[None]:
    """Compiles started inside the block give up past ``histories`` histories, or when a walk
    has run ``seconds``, raising :class:`~nashzoo.games.base.GameTooLarge` as under
    :data:`MAX_HISTORIES_VARIABLE` (the smaller cap wins): for a caller that wants a game's
    tree only when it is quick to make, and otherwise says so (``nashzoo games`` counting
    information sets; a deep game such as OpenSpiel's chess walks only tens of thousands of
    histories a second). A game that counts its histories is refused before its compile starts;
    a walk at its next look past either limit (looks are a quarter of a second apart at most,
    :mod:`~nashzoo.games.progress`). A tree compiled inside is cached like any other, and a tree
    compiled already is served inside whatever its size. The cap holds in the thread (context)
    that opened the block, not in the threads it starts: a ``ThreadPoolExecutor``'s function
    opens its own."""
    if not isinstance(histories, int) or histories <= 0:
        raise ValueError(f"history_cap needs a positive whole number, got {histories!r}")
    if seconds is not None and not seconds > 0:
        raise ValueError(f"history_cap needs seconds > 0 or None, got {seconds!r}")
    token = _BLOCK_CAP.set((histories, seconds))
    try:
        yield
    finally:
        _BLOCK_CAP.reset(token)


def history_limit() -> int | None:
    """The most histories a compile started now may have (:data:`MAX_HISTORIES_VARIABLE` or
    :func:`history_cap`, the smaller), ``None`` without a cap: for code that can do without the
    tree (a learner that plays through the envs) and should rather than be refused."""
    return _cap()[0]


def _cap() -> tuple[int | None, str]:
    """The cap on one compile's histories, and what set it, as messages name it."""
    cap, block = max_histories(), _BLOCK_CAP.get()
    if block is not None and (cap is None or block[0] < cap):
        return block[0], _BLOCK_CAP_NAME
    return cap, MAX_HISTORIES_VARIABLE


def _time_allowed() -> float | None:
    """The seconds :func:`history_cap` allows a walk started now (``None``: no bound)."""
    block = _BLOCK_CAP.get()
    return None if block is None else block[1]


def available_memory() -> int | None:
    """Bytes of memory available to start new work, or ``None`` where this cannot be read (not
    Linux): the machine's ``MemAvailable``, or less where a memory limit on this process's
    control group (a container's, a SLURM job's, a systemd unit's) leaves less. Reading the
    machine's alone, a job limited to 256 MiB on a 22 GiB machine compiled a 306 MiB game and
    was killed by the kernel, where a one-line refusal was due."""
    found = [m for m in (_meminfo_bytes("MemAvailable"), cgroup_headroom()) if m is not None]
    return min(found) if found else None


PROC_CGROUP = Path("/proc/self/cgroup")
PROC_MOUNTINFO = Path("/proc/self/mountinfo")
CGROUP_ROOT = Path("/sys/fs/cgroup")  # where the hierarchies are looked for without mountinfo
_NO_LIMIT = 2**60  # cgroup v1 writes "no limit" as the largest page-aligned 64-bit number


@dataclasses.dataclass(frozen=True)
class CgroupMount:
    """One mounted control-group hierarchy, as ``/proc/self/mountinfo`` lists it: the folder of
    the hierarchy mounted (``root``, ``/`` unless only a subtree is, as in a container without
    a cgroup namespace), where it is mounted, whether it is v2, and (v1) its controllers."""

    root: str
    point: Path
    v2: bool
    controllers: frozenset[str]


def cgroup_mounts() -> list[CgroupMount] | None:
    """The control-group hierarchies mounted in this process's view, from
    ``/proc/self/mountinfo``; ``None`` where it cannot be read or lists none (then
    :func:`cgroup_folders` looks under ``/sys/fs/cgroup`` by name)."""
    try:
        lines = PROC_MOUNTINFO.read_text().splitlines()
    except OSError:
        return None
    found = []
    for line in lines:
        # "ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER"
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(" "), tail.split(" ")
        if len(fields) < 6 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        root, point = (_unescaped(field) for field in fields[3:5])
        v2 = rest[0] == "cgroup2"
        controllers = frozenset() if v2 else frozenset(rest[2].split(",")) - {"rw", "ro"}
        found.append(CgroupMount(root, Path(point), v2, controllers))
    return found or None


def _unescaped(field: str) -> str:
    """A mountinfo path with its octal escapes (``\\040`` for a space) decoded."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def cgroup_folders(controller: str) -> list[tuple[Path, bool]]:
    """The folders of this process's control groups for ``controller`` (``"memory"``,
    ``"cpu"``), each with whether it is cgroup v2: from its own group up to the root of the
    mount (limits are hierarchical: a group's holds for every group below it), for the v2
    hierarchy and v1's controller alike (where a machine has both, the files of the one not in
    use are absent).

    The hierarchies are found where ``/proc/self/mountinfo`` says they are mounted (v2 is often
    at ``/sys/fs/cgroup/unified`` beside v1's controllers; a v1 controller may share a mount
    with others, ``cpu,cpuacct``), a group's folder relative to the folder the mount shows;
    without mountinfo, under ``/sys/fs/cgroup`` by name. A group path not under what a mount
    shows (a container without a cgroup namespace sees the host's paths; ``/../x`` climbs out
    of the namespace) leaves the mount's own folder, the nearest group it can read, to read.
    Empty where ``/proc/self/cgroup`` cannot be read."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return []
    mounts = cgroup_mounts()
    found: list[tuple[Path, bool]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        v2 = parts[1] == ""
        if not v2 and controller not in parts[1].split(","):
            continue
        if mounts is None:
            places = [("/", CGROUP_ROOT if v2 else CGROUP_ROOT / controller)]
        else:
            places = [
                (m.root, m.point)
                for m in mounts
                if m.v2 == v2 and (v2 or controller in m.controllers)
            ]
        for root, point in places[:1]:  # a hierarchy mounted twice has the same files
            found.extend((folder, v2) for folder in _up_from(parts[2], root, point))
    return found


def _up_from(group: str, root: str, point: Path) -> list[Path]:
    """The folders of ``group`` (a path in the hierarchy) and the groups above it, down to
    ``point``, where the hierarchy's folder ``root`` is mounted; ``point`` alone when the group
    is not under ``root`` or climbs with ``..``."""
    parts = [part for part in group.split("/") if part]
    base = [part for part in root.split("/") if part]
    if ".." in parts or parts[: len(base)] != base:
        return [point]
    below = parts[len(base) :]
    return [point.joinpath(*below[:depth]) for depth in range(len(below), -1, -1)]


def cgroup_headroom() -> int | None:
    """The bytes this process's memory control group can still grow by, the least over it and
    the groups above it (:func:`cgroup_folders`); ``None`` where no limit is set or none can
    be read. cgroup v2 (``memory.max``, ``memory.current``) and v1 (``memory.limit_in_bytes``,
    ``memory.usage_in_bytes``); the inactive file cache, which the kernel reclaims before it
    kills, counts as free."""
    least: int | None = None
    for folder, v2 in cgroup_folders("memory"):
        if v2:
            room = _group_headroom(folder, "memory.max", "memory.current", "inactive_file")
        else:
            room = _group_headroom(
                folder, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
            )
        if room is not None:
            least = room if least is None else min(least, room)
    return least


def _group_headroom(folder: Path, limit_file: str, usage_file: str, cache_key: str) -> int | None:
    """One control group's limit less its usage (its inactive file cache counted free);
    ``None`` without a limit or the files."""
    try:
        limit_text = (folder / limit_file).read_text().strip()
        if limit_text == "max" or int(limit_text) >= _NO_LIMIT:
            return None
        usage = int((folder / usage_file).read_text().strip())
    except (OSError, ValueError):
        return None
    cache = 0
    with contextlib.suppress(OSError, ValueError):
        for stat_line in (folder / "memory.stat").read_text().splitlines():
            key, _, value = stat_line.partition(" ")
            if key == cache_key:
                cache = int(value)
    return max(int(limit_text) - max(usage - cache, 0), 0)


def resident_memory() -> int | None:
    """This process's resident bytes, or ``None`` where this cannot be read (not Linux)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _meminfo_bytes(field: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        return None
    return None


def check_cap(game_id: str, histories: int) -> None:
    """Refuse ``histories`` histories past the cap (:func:`history_limit`): before a compile
    of a game that counts them, and after a vectorised builder's of one that does not (Kuhn's
    and Leduc's are built in milliseconds; the cap used to pass them by)."""
    cap, source = _cap()
    if cap is not None and histories > cap:
        raise GameTooLarge(
            f"{display_id(game_id)} has {_count(histories)} histories, over the cap of {cap:,} "
            f"set by {source}; {_ADVICE}"
        )


def check_counted_game(game: Game) -> None:
    """Refuse, before any work, a game that counts its histories (``Game.num_histories()``,
    Liar's dice does) when they would not fit (:func:`check_counted`); any other game passes
    here, its walk being checked as it goes. What a compile asks first, and what a race asks
    before it starts its runs (each would fail alike)."""
    histories = game.num_histories()
    if histories is not None:
        check_counted(game.id, histories)


def check_counted(game_id: str, histories: int) -> None:
    """Refuse, before compiling, a game that says it has ``histories`` histories when they
    pass the cap or would not fit in memory at :data:`BYTES_PER_HISTORY` each."""
    check_cap(game_id, histories)
    available = available_memory()
    if available is not None and histories * BYTES_PER_HISTORY > MEMORY_SHARE * available:
        raise GameTooLarge(
            f"{display_id(game_id)} has {_count(histories)} histories: compiling them takes about "
            f"{_size(histories * BYTES_PER_HISTORY)} and this machine has "
            f"{_size(available)} available; {_ADVICE}"
        )


def sampled_size(root: Any, ops: Any, paths: int = SAMPLED_PATHS, seconds: float = 2.0) -> int:
    """The number of histories below ``root`` (itself included), estimated from random paths
    without enumerating them: along a path that picks uniformly among each node's moves (chance
    outcomes included), ``1 + b1 + b1 b2 + ...`` with ``b_d`` the number of moves at depth ``d``
    is an unbiased estimate of the tree's size (Knuth 1975, "Estimating the efficiency of
    backtrack programs"). The mean over ``paths`` paths (as many as fit in ``seconds``, at
    least one), from a fixed seed so the same game gets the same estimate, rounded to a whole
    number. In integers, exactly: a deep game's paths pass the largest float (OpenSpiel's chess:
    a float estimate was ``inf``, and the refusal failed to print it). ``ops``: how to ask a
    state of the walk (:class:`~nashzoo.games.fast_walk.StateOps`). A path ends after
    ``checks.MAX_DEPTH`` moves, where the walk refuses a history as endless: rules that never
    end had the sampler follow one path for ever."""
    rng = random.Random(0)
    estimates: list[int] = []
    deadline = time.perf_counter() + seconds
    max_depth = checks.MAX_DEPTH  # read now: a test (or a user) may lower it
    while len(estimates) < paths and (not estimates or time.perf_counter() < deadline):
        state, width, total, depth = root, 1, 1, 0
        while (player := ops.player(state)) != TERMINAL and depth <= max_depth:
            depth += 1
            if player == CHANCE:
                moves = [outcome for outcome, _ in ops.outcomes(state)]
            else:
                moves = list(ops.legal(state))
            if not moves:
                break  # a broken node: the walk itself names it
            width *= len(moves)
            total += width
            state = ops.child(state, rng.choice(moves))
        estimates.append(total)
    return (2 * sum(estimates) + len(estimates)) // (2 * len(estimates))  # the mean, rounded


class WalkLimits:
    """The limits of one walk: :meth:`check` raises
    :class:`~nashzoo.games.base.GameTooLarge` once the walk has passed either. The memory
    figures are first read at the first look past the start (after
    :data:`~nashzoo.games.progress.FIRST_LOOK` histories), so a small game's walk reads nothing
    but the cap (reading them costs about
    40 us, a third of a bridged Kuhn poker's whole compile)."""

    def __init__(self, game_id: str, estimate: Callable[[], int] | None = None) -> None:
        self.game_id = game_id
        self.estimate = estimate  # the tree's size from a sample of paths, asked once
        self.first_visited = 0
        self.cap, self.cap_source = _cap()
        self.seconds = _time_allowed()
        self.started = _clock()
        self.start: int | None = None  # resident bytes at the first look past the start
        self.available: int | None = None
        self._first = True
        self._last: tuple[int, int] | None = None  # (histories, resident bytes) at the last look

    def check(self, visited: int) -> int | None:
        """Raise if ``visited`` histories pass the cap, or the process has grown by more
        than :data:`MEMORY_SHARE` of the memory that was available at the first look.
        Otherwise return how many more histories may be walked before the next look so that,
        at the bytes per history seen since the last one, the walk gets at most half of the
        way from here to that limit (``None``: no bound from memory)."""
        if self.cap is not None and visited > self.cap:
            raise GameTooLarge(
                f"{display_id(self.game_id)} has more than the {self.cap:,} histories that "
                f"{self.cap_source} allows; {_ADVICE}"
            )
        if self.seconds is not None and _clock() - self.started > self.seconds:
            raise GameTooLarge(
                f"{display_id(self.game_id)} was not compiled within the {self.seconds:g} s "
                f"that {_BLOCK_CAP_NAME} allows ({visited:,} histories walked); {_ADVICE}"
            )
        if visited == 0:
            return None
        if self._first:
            self._first = False
            self.start, self.available = resident_memory(), available_memory()
            self.first_visited = visited
            if self.start is not None:
                self._last = (visited, self.start)
            return None
        if self.start is None or self.available is None:
            return None  # the memory cannot be read here: only the cap applies
        now = resident_memory()
        if now is None:
            return None
        limit = MEMORY_SHARE * self.available
        if now - self.start > limit:
            raise GameTooLarge(
                f"{display_id(self.game_id)} is too big to compile on this machine: after "
                f"{visited:,} histories the walk holds {_size(now - self.start)}, more than "
                f"{MEMORY_SHARE:.0%} of the {_size(self.available)} that was available; "
                f"{_ADVICE}"
            )
        if self.estimate is not None and (
            visited >= ESTIMATE_AFTER or _clock() - self.started >= ESTIMATE_AFTER_SECONDS
        ):
            self._refuse_by_estimate(visited, now - self.start, limit)
        before, then = self._last or (visited, now)
        self._last = (visited, now)
        if visited <= before or now <= then:
            return None
        per_history = (now - then) / (visited - before)
        return max(1, int((limit - (now - self.start)) / per_history / 2))

    def _refuse_by_estimate(self, visited: int, grown: int, limit: float) -> None:
        """Raise where the tree's estimated size, at the bytes per history walked so far, would
        need :data:`ESTIMATE_MARGIN` times the memory the walk may take (asked once)."""
        estimate, self.estimate = self.estimate, None
        walked = visited - self.first_visited
        if estimate is None or walked <= 0 or grown <= 0:
            return
        histories = estimate()
        needed = histories * grown // walked  # exact: a deep game's estimate passes 1e308
        if needed > ESTIMATE_MARGIN * limit:
            raise GameTooLarge(
                f"{display_id(self.game_id)} is too big to compile on this machine: random paths "
                f"through it put it at about {_count(histories)} histories (Knuth's estimate), "
                f"some {_size(needed)} at the "
                f"memory the first {visited:,} took, against the {_size(limit)} the walk may "
                f"take ({MEMORY_SHARE:.0%} of what was available); {_ADVICE}"
            )


_ADVICE = (
    "exact evaluation (NashConv, best responses, races) and the tree learners (the CFR family, "
    "XFP, deep_cfr) need the whole tree; pick a smaller configuration of the game, or play it "
    "through nashzoo.envs, which step through its states without compiling it"
)
