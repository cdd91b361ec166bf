"""nashzoo used from several threads of one process (a notebook's or a sweep's
``ThreadPoolExecutor``): what one thread's call must not break for another."""

from __future__ import annotations

import os
import threading

import pytest

from nashzoo.games import _numba
from nashzoo.games.cache import GameCache


def test_a_kernel_is_reachable_only_once_the_kernels_it_calls_are_put_in_place(monkeypatch):
    """The first kernel call binds every kernel in its module. Bound one by one, a kernel that
    calls one defined after it was reachable by another thread while its callee was still the
    lazy stand-in, and numba, resolving the callee at that thread's first call, failed with
    ``TypingError: Untyped global name 'two_player_values_into'`` (a cold numba cache, two
    threads evaluating at once). The stand-in ``njit`` here resolves globals as numba does, and
    looks, as another thread would, at the module each time the binding makes a kernel."""
    namespace: dict = {}
    exec(  # a caller defined before its callee, as two_player_values and _lay_out_loop are
        "def caller(x):\n    return callee(x) + 1\n\ndef callee(x):\n    return 2 * x\n",
        namespace,
    )
    seen: list[object] = []

    def fake_njit(**options):
        def decorate(function):
            def dispatcher(*args):  # numba types the globals a kernel calls at its first call
                for name in function.__code__.co_names:
                    if isinstance(function.__globals__.get(name), _numba._Lazy):
                        raise TypeError(f"Untyped global name {name!r}")
                return function(*args)

            # another thread, now: a kernel still lazy would wait for the binding's lock
            if not isinstance(namespace["caller"], _numba._Lazy):
                try:
                    seen.append(namespace["caller"](1))
                except TypeError as err:
                    seen.append(err)
            return dispatcher

        return decorate

    monkeypatch.setattr(_numba, "_PURE", False)
    monkeypatch.setattr(_numba, "_KERNELS", [])
    monkeypatch.setattr(_numba, "_njit", fake_njit)
    for name in ("caller", "callee"):
        namespace[name] = _numba.compiled(namespace[name])
    assert namespace["caller"](1) == 3
    assert not seen, seen
    assert not isinstance(namespace["callee"], _numba._Lazy)


def test_limits_let_go_out_of_order_put_the_settings_from_before_the_first_back(monkeypatch):
    """Two threads' ``with limit_threads():`` (two ``Trainer(processes=2)`` runs, two serial
    races) overlap: A's starts, B's starts, A's ends, B's ends. Each limit put back what it had
    found, so B's end put back A's one thread: the process, and every process it started, stayed
    on one thread for good. The order is what two threads give; the check is the environment
    the children read."""
    from nashzoo.train.threads import THREAD_VARIABLES, limit_threads

    for var in THREAD_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    before = {var: os.environ.get(var) for var in THREAD_VARIABLES}
    first = limit_threads()
    second = limit_threads(3)
    assert os.environ["OMP_NUM_THREADS"] == "3"
    first.restore()
    assert os.environ["OMP_NUM_THREADS"] == "3"  # the limit still held holds
    second.restore()
    assert {var: os.environ.get(var) for var in THREAD_VARIABLES} == before
    second.restore()  # a second call changes nothing
    with limit_threads(), limit_threads(2):  # nested, in order, as before
        assert os.environ["OMP_NUM_THREADS"] == "2"
    assert {var: os.environ.get(var) for var in THREAD_VARIABLES} == before


class _Named:
    """What a cache keys a game by: its class and its id."""

    def __init__(self, id: str) -> None:
        self.id = id


def test_a_cached_game_is_served_while_another_thread_builds_a_big_one():
    """The cache held one lock while it built a value, so a thread asking for Kuhn's cached
    tree waited for another thread's 13-second compile of rung 5. Now only a thread asking for
    the game being built waits."""
    started, release = threading.Event(), threading.Event()

    def build(game):
        if game.id == "big":
            started.set()
            assert release.wait(30), "the test never let the big build finish"
        return [game.id]

    cache = GameCache(build)
    small = cache(_Named("small"))
    big = threading.Thread(target=cache, args=(_Named("big"),))
    big.start()
    assert started.wait(30)
    served: list = []
    asking = threading.Thread(
        target=lambda: served.extend([cache(_Named("small")), cache(_Named("other"))])
    )
    asking.start()
    asking.join(timeout=10)
    still_waiting = asking.is_alive()
    release.set()
    big.join(30)
    asking.join(30)
    assert not still_waiting, "a cached and a new small game waited for another game's build"
    assert served[0] is small and served[1] == ["other"]


def test_threads_asking_for_one_game_at_once_build_it_once_and_share_it():
    builds: list[str] = []
    gate = threading.Barrier(6)

    def build(game):
        builds.append(game.id)
        return [game.id]

    cache = GameCache(build)
    values: list = []

    def ask():
        gate.wait(30)
        values.append(cache(_Named("shared")))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert builds == ["shared"]
    assert len(values) == 6 and all(value is values[0] for value in values)


def test_a_build_that_asks_for_its_own_game_fails_instead_of_hanging():
    """A user's hook that compiles its own game by mistake recursed until Python stopped it;
    with a lock per game it must still do so, not wait on itself for ever."""

    def build(game):
        return cache(game)

    cache = GameCache(build)
    with pytest.raises(RecursionError):
        cache(_Named("loop"))


def test_a_folder_another_thread_writes_is_refused_naming_this_process(tmp_path):
    """A folder lock refuses this process's other threads too (a lock is per open file); the
    message said "another nashzoo process" and gave this process's own pid."""
    from nashzoo.io import FolderLockedError, folder_lock

    locked, release = threading.Event(), threading.Event()

    def hold():
        with folder_lock(tmp_path / "out"):
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(30)
        with pytest.raises(FolderLockedError) as refused, folder_lock(tmp_path / "out"):
            pass
    finally:
        release.set()
        holder.join(30)
    assert f"by this process (pid {os.getpid()}: another thread" in str(refused.value)


class _Value:
    """A value a cache can hold weakly (as a compiled tree), unlike a list."""

    def __init__(self, id: str) -> None:
        self.id = id


def test_a_build_that_raises_leaves_no_lock_behind_and_a_waiter_builds_again():
    """The per-game lock was removed only after a build that returned: every game whose build
    raised (a refused game, an interrupt) kept its lock and its class in the cache for good.
    A thread that waited for the failed build builds the value itself, in either order."""
    started, fail = threading.Event(), threading.Event()
    builds: list[str] = []

    def build(game):
        builds.append(game.id)
        if len(builds) == 1:
            started.set()
            assert fail.wait(30), "the test never let the first build fail"
            raise ValueError("refused")
        return _Value(game.id)

    cache = GameCache(build)
    outcomes: dict[str, object] = {}

    def first():
        with pytest.raises(ValueError, match="refused"):
            cache(_Named("game"))
        outcomes["first"] = "raised"

    failing = threading.Thread(target=first)
    failing.start()
    assert started.wait(30)
    waiting = threading.Thread(target=lambda: outcomes.update(second=cache(_Named("game"))))
    waiting.start()
    fail.set()
    failing.join(30)
    waiting.join(30)
    assert outcomes["first"] == "raised"
    assert isinstance(outcomes["second"], _Value) and builds == ["game", "game"]
    assert cache._building == {}
    refused = GameCache(lambda game: (_ for _ in ()).throw(ValueError(game.id)))
    for number in range(50):
        with pytest.raises(ValueError):
            refused(_Named(f"refused-{number}"))
    assert refused._building == {}


def test_a_value_built_while_the_caches_are_cleared_is_served_but_not_kept():
    """clear_caches() waited for a build in progress while the cache held one lock, so nothing
    built from the rules it was called to forget was kept; with the build outside the lock it
    returned at once and the build then kept its value, served to every later caller."""
    from nashzoo.games.cache import clear_caches

    started, finish = threading.Event(), threading.Event()
    rules = ["old"]

    def build(game):
        seen = rules[0]
        if seen == "old":
            started.set()
            assert finish.wait(30), "the test never let the build finish"
        return _Value(seen)

    cache = GameCache(build)
    served: list = []
    building = threading.Thread(target=lambda: served.append(cache(_Named("game"))))
    building.start()
    assert started.wait(30)
    rules[0] = "new"
    clear_caches()
    finish.set()
    building.join(30)
    assert served[0].id == "old"  # its caller asked before the clear: it gets what it built
    assert cache(_Named("game")).id == "new"


def test_many_threads_asking_for_many_games_build_each_once():
    from nashzoo.games.cache import CACHED_GAMES

    games = [f"game-{number}" for number in range(CACHED_GAMES)]
    builds: list[str] = []
    gate = threading.Barrier(4)

    def build(game):
        builds.append(game.id)
        return _Value(game.id)

    cache = GameCache(build)
    served: list[list] = [[] for _ in range(4)]

    def ask(seat: int) -> None:
        gate.wait(30)
        for step in range(3 * len(games)):
            served[seat].append(cache(_Named(games[(step * (seat + 1)) % len(games)])))

    threads = [threading.Thread(target=ask, args=(seat,)) for seat in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(builds) == sorted(games)
    by_id: dict[str, _Value] = {}
    for value in (value for values in served for value in values):
        assert by_id.setdefault(value.id, value) is value
    assert cache._building == {}


def test_a_value_of_none_is_built_once_like_any_other():
    """The cache took a value of ``None`` for "not built": ``lp_refusal``'s "nothing to refuse"
    built the LP's payoff matrix again on every call, twice in each ``evaluate``."""
    builds: list[str] = []

    def build(game):
        builds.append(game.id)

    cache = GameCache(build)
    assert cache(_Named("none")) is None and cache(_Named("none")) is None
    assert builds == ["none"]
