"""One seat's learner in a worker process, so that the two seats of a Trainer step at once.

With the ``"simultaneous"`` schedule a trainer iteration is two independent pieces of work: each
seat steps against the other's policy as it stood before the iteration. For learners whose step
is far more work than handing over a policy (the neural learners: a step plays hundreds of
episodes and makes dozens of gradient updates, a policy is a few small weight matrices), seat 1
can step in a second process while seat 0 steps in the caller's, and one iteration takes about
as long as the slower seat's step instead of the sum of both. ``Trainer(processes=2)`` does this
for the length of each :meth:`~nashzoo.train.Trainer.run`; what comes out is the same, bit for
bit, as the serial ``"simultaneous"`` schedule with one thread per process
(``tests/test_seat_worker.py``).

:class:`SeatWorker` stands in for the learner during the run. It starts a worker process (the
``spawn`` method, which is safe with torch and every platform), sends it the learner (pickled),
and forwards what the Trainer asks of a learner: ``step`` (split into :meth:`SeatWorker.step_async`
and :meth:`SeatWorker.step_wait` so the caller can work in between), its policies, its work
counters and its checkpoint. :meth:`SeatWorker.close` brings the learner back, with everything
it learned, and stops the process. An error inside the worker is raised again in the caller
(same exception type where it can be pickled, the worker's traceback attached), and the learner
is still brought back: a run that fails or is interrupted keeps what it had done.

The learner's compiled tree travels with it and is the worker's tree of the game from then on
(the worker does not compile the game again: on rung 4 of the scale ladder, a bridged OpenSpiel
game, that was 7 s of every ``run``); back here it is this process's own tree again, not a
copy (:meth:`nashzoo.games.CompiledTree.__reduce__`).

Each process is held to one thread (:func:`nashzoo.train.threads.limit_threads`): two processes
on two cores, each with one, is the point; a BLAS pool per process would fight for the cores.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from nashzoo.agents.base import Learner
from nashzoo.agents.policy import Policy
from nashzoo.games.base import one_line
from nashzoo.games.tree import adopting_pickled_trees

__all__ = ["SeatWorker", "SeatWorkerError"]

_VIEWS = ("current", "average")


class SeatWorkerError(RuntimeError):
    """The worker process holding a seat's learner failed or died."""


def _serve(conn: Any) -> None:
    """The worker's loop: hold one learner and answer the caller's requests in order."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    from nashzoo.train.threads import limit_threads

    limit_threads()
    learner: Learner | None = None
    while True:
        try:
            op, arg = conn.recv()
        except EOFError:  # the caller is gone
            return
        try:
            reply: Any = None
            if op == "start":
                with adopting_pickled_trees():  # sent just now by the same code
                    learner = pickle.loads(arg)
            elif learner is None:
                raise RuntimeError(f"request {op!r} before the worker was given its learner")
            elif op == "step":
                opponent, view = arg
                metrics = learner.step(opponent)
                reply = (metrics, learner.work(), _policy(learner, view))
            elif op == "policy":
                reply = _policy(learner, arg)
            elif op == "checkpoint":
                reply = learner.checkpoint_bytes()
            elif op == "close":
                conn.send(("ok", _sent_back(learner)))
                return
            else:
                raise ValueError(f"unknown request {op!r}")
            conn.send(("ok", reply))
        except BaseException as err:  # every failure goes back to the caller
            detail = traceback.format_exc()
            try:
                conn.send(("error", (pickle.dumps(err), detail)))
            except Exception:  # the exception itself does not pickle
                conn.send(("error", (None, detail)))


def check_can_start_a_worker() -> None:
    """Refuse ``processes=2`` in a process that may not start processes: a daemonic one, as a
    ``multiprocessing.Pool``'s workers are (a researcher's sweep of runs over a pool). The run
    failed as it started with multiprocessing's bare ``AssertionError: daemonic processes are
    not allowed to have children``, which named neither ``processes`` nor the way out."""
    if multiprocessing.current_process().daemon:
        raise ValueError(
            "processes=2 starts a worker process for seat 1, and this process is a daemonic "
            "one (a multiprocessing.Pool's worker), which may not start processes: run with "
            "processes=1 here, or sweep over a concurrent.futures.ProcessPoolExecutor, whose "
            "workers may"
        )


def _sent_back(learner: Learner) -> tuple[str, bytes, str]:
    """The learner as the worker sends it back: pickled, or, where it picked up something
    pickle refuses while it trained (a lambda, a generator, an open file), its checkpoint,
    from which the caller rebuilds it as :meth:`Trainer.load` would. It used to be lost, the
    worker called dead and the learner's checkpoint never asked for."""
    try:
        return "pickle", pickle.dumps(learner), ""
    except Exception as err:  # pickle raises many kinds: each is "not this way"
        return "checkpoint", learner.checkpoint_bytes(), f"{type(err).__name__}: {err}"


def _pickled(learner: Learner) -> bytes:
    """``learner`` pickled for its worker, or a TypeError that says why it must be: a user's
    learner holding a lambda or a local function came back as pickle's bare
    ``Can't pickle local object ...``, with no word of processes=2; one whose class (or config,
    or game) was defined in a notebook or ``python -c`` pickled here and failed in the worker
    with ``Can't get attribute 'MyLearner' on <module '__main__'>``."""
    interactive = [
        f"{what} {cls.__qualname__}"
        for what, cls in (
            ("learner", type(learner)),
            ("config", type(learner.config)),
            ("game", type(learner.game)),
        )
        if cls.__module__ == "__main__" and not _main_is_a_file()
    ]
    if interactive:
        raise TypeError(
            f"processes=2 sends seat {learner.seat}'s learner ({learner.name}) to a worker "
            f"process, which imports classes by module, and its {', '.join(interactive)} "
            "was defined in this interactive session (a notebook, python -c or stdin), which "
            "the worker cannot import: move the definition into a module and import it from "
            "there, or run with processes=1"
        )
    try:
        return pickle.dumps(learner)
    except (pickle.PicklingError, AttributeError, TypeError) as err:
        raise TypeError(
            f"processes=2 sends seat {learner.seat}'s learner ({learner.name}) to its worker "
            f"process by pickle, and it cannot be pickled ({err}); hold module-level functions "
            "rather than lambdas or local functions in the learner and its config, or run "
            "with processes=1"
        ) from err


def _main_is_a_file() -> bool:
    """Whether ``__main__`` is a script file, which a spawned worker imports again (so the
    classes it defines are found there); a notebook, ``python -c`` or stdin is none."""
    file = getattr(sys.modules.get("__main__"), "__file__", None)
    return bool(file) and not str(file).startswith("<")


def _whole_message() -> contextlib.AbstractContextManager[None]:
    """Hold a Ctrl-C that comes while a message is written to or read from the worker's pipe
    until the message is whole, then deliver it to the handler that was there: cut
    mid-message, the pipe was left unreadable and every later request read garbage. Each
    Ctrl-C held is delivered, in turn: two in one message are a second Ctrl-C, which
    interrupts at once, not one."""
    return _ctrl_c_held(lambda held: None)


@contextlib.contextmanager
def _ctrl_c_held(before_holding: Callable[[list[int]], None]) -> Iterator[None]:
    """Hold each Ctrl-C that comes in the block, then deliver them in turn to the handler
    that was there. ``before_holding(held)`` sees the ones held so far first, and may raise
    (a KeyboardInterrupt then goes on at once). Only in the main thread (where Python runs
    signal handlers), and only where the handler is Python code (an ignored Ctrl-C stays
    ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        before_holding(held)
        held.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        for _ in held:  # the handler runs at each (it may raise: the rest are then moot)
            signal.raise_signal(signal.SIGINT)


def _policy(learner: Learner, view: str | None) -> Policy | None:
    if view is None:
        return None
    return learner.average_policy() if view == "average" else learner.current_policy()


class SeatWorker:
    """A learner stepping in a worker process (see the module docs).

    Reads like the learner for what a Trainer needs: ``name``, ``seat``, ``game``, ``config``,
    ``seed``, ``opponent_view``, ``iterations``, :meth:`work`, :meth:`current_policy`,
    :meth:`average_policy`, :meth:`checkpoint_bytes` and :meth:`step`. Anything else is the
    learner's own business: read it after :meth:`close`.
    """

    brought_back: Learner | None
    """The learner once :meth:`close` has read it back (``None`` before): there even where a
    Ctrl-C came as it arrived and :meth:`close` raised it instead of returning."""

    def __init__(self, learner: Learner) -> None:
        if not isinstance(learner, Learner):
            raise TypeError(f"SeatWorker runs a Learner, got {type(learner).__name__}")
        self.name = learner.name
        self.seat = learner.seat
        self.game = learner.game
        self.config = learner.config
        self.seed = learner.seed
        self.opponent_view = learner.opponent_view
        self.learns = learner.learns
        self._work = learner.work()
        self._policies: dict[str, Policy] = {}
        self._pending = False
        self._step_done = False
        self._unanswered = 0  # requests sent whose replies are not read yet (see _receive)
        self.brought_back = None
        self._closed = False
        self._started = False
        self._lost: str | None = None  # why the learner is gone, once the worker died
        check_can_start_a_worker()
        state = _pickled(learner)  # before a process is started for it
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child,), name=f"nashzoo-seat{self.seat}", daemon=True
        )
        self._process.start()
        child.close()
        try:
            self._request("start", state)
        except BaseException:
            self._stop_process()
            raise
        self._started = True

    # --- what the Trainer reads ----------------------------------------------------------------
    @property
    def iterations(self) -> int:
        return int(self._work["iterations"])

    def work(self) -> dict[str, int]:
        """The learner's cumulative work as of its last step."""
        return dict(self._work)

    @property
    def nodes_touched(self) -> int:
        return int(self._work["nodes_touched"])

    @property
    def env_steps(self) -> int:
        return int(self._work["env_steps"])

    def current_policy(self) -> Policy:
        return self._policy("current")

    def average_policy(self) -> Policy:
        return self._policy("average")

    def checkpoint_bytes(self) -> bytes:
        """The learner's checkpoint, made in the worker."""
        self._check_idle("checkpoint_bytes")
        return self._request("checkpoint", None)

    # --- stepping ------------------------------------------------------------------------------
    def step(self, opponent: Policy, view: str | None = None) -> dict[str, float]:
        """One step of the learner against ``opponent`` (waits for it)."""
        self.step_async(opponent, view)
        return self.step_wait()

    def step_async(self, opponent: Policy, view: str | None = None) -> None:
        """Start one step against ``opponent``; ``view`` (``"current"``, ``"average"`` or
        None) is the policy of this learner to send back with the result, ready for the next
        iteration's opponent."""
        self._check_idle("step_async")
        if view is not None and view not in _VIEWS:
            raise ValueError(f"view must be one of {_VIEWS} or None, got {view!r}")
        self._policies.clear()
        self._send("step", (opponent, view), then=lambda: self._mark_pending(view))

    @property
    def last_step_done(self) -> bool:
        """Whether the last step started was done: its reply taken, and no error in it (a
        Ctrl-C held through the reply's read goes on after it is taken, whichever it was)."""
        return self._step_done

    def _mark_pending(self, view: str | None) -> None:
        """The step is sent: its reply is the one to wait for (marked in the same held
        stretch as the send, so a Ctrl-C cannot leave a step running that nobody collects)."""
        self._pending = True
        self._pending_view = view
        self._step_done = False

    def step_wait(self) -> dict[str, float]:
        """The metrics of the step started by :meth:`step_async`."""
        if not self._pending:
            raise RuntimeError("SeatWorker.step_wait without a step_async before it")
        # An interrupt during the wait leaves the reply in the pipe and the step pending, for
        # a later step_wait or close() to collect: marked done before the wait, a Ctrl-C
        # during it made close() read the step's reply as the learner (TypeError) and lose
        # seat 1's learner. Once read, the reply is taken in whole (_stepped).
        return self._receive(self._stepped)

    def _stepped(self, reply: bytes) -> dict[str, float]:
        """Take the step's reply: its work and the policy sent back with it."""
        self._pending = False  # read: the step's own error, if any, is raised here
        metrics, work, policy = self._unpacked(reply)
        self._work = work
        if policy is not None and self._pending_view is not None:
            self._policies[self._pending_view] = policy
        self._step_done = True
        return metrics

    # --- the end -------------------------------------------------------------------------------
    def close(self) -> Learner:
        """Finish any step in flight, stop the worker and return the learner as it is now.

        Raises:
            SeatWorkerError: the worker died; the learner's state is lost since it started.
        """
        if self._lost is not None:  # release the pipe and reap the dead process all the same
            self._closed = True
            self._stop_process()
            raise SeatWorkerError(self._lost)
        if self._closed:
            raise RuntimeError("SeatWorker.close was called already")
        self._closed = True
        abandoned = False
        # A step still in flight finishes first (the worker answers in order), so the learner
        # comes back whole; its reply, and any other an interrupt left unread, is dropped on
        # the way to this one's. The wait is said before it starts where a step is in flight,
        # else at a first Ctrl-C during it, which is held: only the next one gives up.
        warned = self._pending and not self._reply_waiting()
        if warned:
            self._say_waiting(step=True)
        try:
            with self._patient_wait(warned):
                self._pending = False
                self._send("close", None)
                return self._receive(self._take_back)  # type: ignore[no-any-return]
        except KeyboardInterrupt:
            if self.brought_back is None:  # the worker is stopped below, the learner with it
                abandoned = True
                self._lost = (
                    f"a Ctrl-C came while seat {self.seat}'s learner ({self.name}) was waited "
                    "for to come back from its worker process, which was then stopped; the "
                    "learner's progress since this run started is lost"
                )
            raise
        except BaseException as err:
            if self.brought_back is None and self._lost is None:
                self._lost = (
                    f"seat {self.seat}'s learner ({self.name}) could not be brought back from "
                    f"its worker process ({type(err).__name__}: {one_line(str(err))}); its "
                    "progress since this run started is lost (with processes=1 it stays in "
                    "this process)"
                )
            raise
        finally:
            self._stop_process(at_once=abandoned)

    def _patient_wait(self, warned: bool) -> contextlib.AbstractContextManager[None]:
        """Hold the first Ctrl-C while :meth:`close` waits (saying what the next one costs),
        unless the wait was said already: a double-tap of Ctrl-C, the first ending the run,
        gave up a learner that was only being pickled back (half a second on Leduc). Held,
        it goes on once the learner is back (:func:`_ctrl_c_held`)."""

        def only_the_first(held: list[int]) -> None:
            if warned or held:
                raise KeyboardInterrupt  # the learner is given up (close() says so)
            self._say_waiting(step=False)

        return _ctrl_c_held(only_the_first)

    def _reply_waiting(self) -> bool:
        """Whether a reply is in the pipe already (a dead worker's pipe says yes: there is
        nothing to wait for, and the read that follows says what happened)."""
        try:
            return bool(self._conn.poll(0))
        except (EOFError, ConnectionError, OSError):
            return True

    def _say_waiting(self, step: bool) -> None:
        """Say why :meth:`close` waits (a step in flight, after an interrupt or an error in the
        other seat, or the learner on its way back), and what another Ctrl-C costs: a step of
        seconds read as a hang."""
        what = (
            "step in its worker process to finish, to take its learner back"
            if step
            else ("learner to come back from its worker process")
        )
        with contextlib.suppress(OSError):  # (a terminal gone: the print is not the point)
            print(
                f"waiting for seat {self.seat}'s {what} (Ctrl-C again to abandon it: its "
                "progress since this run started would be lost)",
                file=sys.stderr,
            )

    @property
    def lost(self) -> str | None:
        """Why the learner is gone (its worker died, or a Ctrl-C stopped it while :meth:`close`
        waited for the learner), ``None`` while it is not."""
        return self._lost

    def _take_back(self, reply: bytes) -> Learner:
        """The learner, kept in :attr:`brought_back` as soon as it is here: a Ctrl-C that
        comes while it is read takes effect after, and the caller still finds it there."""
        how, state, why = self._unpacked(reply)
        if how == "pickle":
            learner = pickle.loads(state)
        else:
            from nashzoo.agents.loading import learner_from_checkpoint  # (loads the registry)
            from nashzoo.io.checkpoint import read_learner_checkpoint

            name = f"seat {self.seat}'s learner ({self.name}) from its worker"
            learner = learner_from_checkpoint(
                read_learner_checkpoint(state, name), self.game, name=name
            )
            warnings.warn(
                f"seat {self.seat}'s learner ({self.name}) could not be pickled back from its "
                f"worker process ({one_line(why)}); it was rebuilt from its checkpoint, as "
                "Trainer.load would: what its checkpoint does not hold is not back",
                stacklevel=4,
            )
        self.brought_back = learner
        return learner

    def __repr__(self) -> str:
        return f"SeatWorker({self.name!r}, seat={self.seat}, iterations={self.iterations})"

    # --- plumbing ------------------------------------------------------------------------------
    def _stop_process(self, at_once: bool = False) -> None:
        """Close the pipe and end the worker: it exits when it reads the pipe's end, else it
        is killed after 10 s, or at once (``at_once``: a learner given up while it stepped,
        where the 10 s were a silent stall after "Ctrl-C again to abandon it")."""
        self._conn.close()
        self._process.join(timeout=0 if at_once else 10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    def _policy(self, view: str) -> Policy:
        policy = self._policies.get(view)
        if policy is None:
            self._check_idle(f"{view}_policy")
            policy = self._policies[view] = self._request("policy", view)
        return policy

    def _check_idle(self, what: str) -> None:
        if self._lost is not None:
            raise SeatWorkerError(self._lost)
        if self._closed:
            raise RuntimeError(f"SeatWorker.{what}: the worker was closed; use the learner")
        if self._pending:
            raise RuntimeError(f"SeatWorker.{what} while a step is in flight: step_wait first")

    def _wait_for_reply(self) -> None:
        try:
            self._conn.poll(None)
        except (EOFError, ConnectionError, OSError) as err:
            raise self._died() from err

    def _request(self, op: str, arg: Any) -> Any:
        self._send(op, arg)
        return self._receive()

    def _send(self, op: str, arg: Any, then: Callable[[], None] | None = None) -> None:
        """Send a request (``then()`` once it is sent). Replies an interrupt left unread are
        read first: the worker answers only when it has written its last reply, so a request
        written while a large reply waited unread (a policy of Leduc's is 440 KB, more than a
        pipe holds) left each side waiting on the other. The worker is then reading, so the
        write finishes, and it is held whole against a Ctrl-C (:func:`_whole_message`)."""
        while self._unanswered:
            self._read_reply(None)
        with _whole_message():
            try:
                self._conn.send((op, arg))
            except (BrokenPipeError, ConnectionError, EOFError) as err:
                raise self._died() from err
            self._unanswered += 1
            if then is not None:
                then()

    def _receive(self, then: Callable[[bytes], Any] | None = None) -> Any:
        """The reply to the latest request: ``then(reply)`` where given, else its payload (or
        the worker's error raised). Replies that interrupts left unread (a Ctrl-C while a
        policy was asked for) come first in the pipe and are dropped here, where the next
        request used to read its predecessor's reply as its own."""
        while True:
            latest = self._unanswered == 1
            taken = self._read_reply((then or self._unpacked) if latest else None)
            if latest:
                return taken

    def _read_reply(self, then: Callable[[bytes], Any] | None) -> Any:
        """Wait for the next reply (interruptible: it stays in the pipe), then read it and
        pass it to ``then`` (dropped if None) in one stretch a Ctrl-C cannot cut
        (:func:`_whole_message`): cut mid-message, the pipe was left unreadable."""
        self._wait_for_reply()
        with _whole_message():
            try:
                reply = self._conn.recv_bytes()
            except (EOFError, ConnectionError, OSError) as err:
                raise self._died() from err
            self._unanswered -= 1  # read: whatever becomes of it, it is not in the pipe
            return None if then is None else then(reply)

    def _unpacked(self, reply: bytes) -> Any:
        """The payload of an ``ok`` reply; the worker's error raised again otherwise."""
        try:
            status, payload = pickle.loads(reply)
        except Exception as err:
            raise SeatWorkerError(
                f"seat {self.seat}'s reply could not be unpickled in this process "
                f"({type(err).__name__}: {err}); the learner is still in its worker"
            ) from err
        if status == "ok":
            return payload
        error, detail = payload
        if error is not None:
            try:
                raised = pickle.loads(error)
            except Exception:
                raised = None
            if isinstance(raised, Exception):
                if hasattr(raised, "add_note"):
                    raised.add_note(f"raised in seat {self.seat}'s worker process:\n{detail}")
                raise raised
        raise SeatWorkerError(f"seat {self.seat}'s learner failed in its worker process:\n{detail}")

    def _died(self) -> SeatWorkerError:
        """The error for a worker found dead; it is kept, and every later use raises it."""
        self._process.join(timeout=1)
        code = self._process.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        if self._started:
            why = (
                "the learner's progress since this run started is lost (the process was killed, "
                "or ran out of memory: check memory limits, or run without processes=2)"
            )
        else:
            why = (
                'if a script started it, make the call under `if __name__ == "__main__":` (the '
                "worker imports the script again before it starts); otherwise run without "
                "processes=2 to see the error in this process, or check memory limits"
            )
        self._lost = f"seat {self.seat}'s worker process ({self.name}) died ({how}); {why}"
        return SeatWorkerError(self._lost)
