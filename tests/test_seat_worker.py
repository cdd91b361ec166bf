"""Trainer(processes=2): seat 1 steps in a worker process, with the serial schedule's results."""

import sys

import numpy as np
import pytest

from nashzoo.agents import make_learner
from nashzoo.agents.cfr import CFR
from nashzoo.agents.policy import PolicyError
from nashzoo.train import Callback, Trainer
from nashzoo.train.callbacks import as_callback
from nashzoo.train.seat_worker import SeatWorker, SeatWorkerError
from nashzoo.train.threads import limit_threads

SMALL = {"hidden_sizes": [16], "episodes_per_step": 16}


def _history(result):
    return [(r.iteration, r.nash_conv, r.work) for r in result.history]


@pytest.mark.parametrize(
    ("name", "config"),
    [("cfr", None), ("es_mccfr", {"trajectories_per_step": 64}), ("nfsp", SMALL)],
)
def test_two_processes_give_the_simultaneous_schedules_results_bit_for_bit(tmp_path, name, config):
    if name == "nfsp":
        pytest.importorskip("torch")
    options = dict(configs=(config, config), schedule="simultaneous", eval_every=4, progress=False)
    with limit_threads():  # the worker runs with one thread: so does the serial reference
        serial = Trainer("kuhn_poker", name, name, **options)
        expected = _history(serial.run(iterations=12))
    path = tmp_path / "run.npz"
    both = Trainer(
        "kuhn_poker", name, name, **options, processes=2, checkpoint_path=path, checkpoint_every=4
    )
    assert _history(both.run(iterations=12)) == expected
    # the learner is back in this process, whole, and a checkpoint taken in the run resumes
    assert type(both.learners[1]) is type(serial.learners[1])
    assert [lr.iterations for lr in both.learners] == [12, 12]
    resumed = Trainer.load(path, processes=2)
    with limit_threads():
        serial.run(iterations=4)
    assert _history(resumed.run(iterations=4))[-1] == _history(serial.result())[-1]


def test_processes_are_validated_with_the_fix_named():
    with pytest.raises(ValueError, match="schedule='simultaneous'"):
        Trainer("kuhn_poker", "nfsp", "nfsp", processes=2)
    for bad in (0, 3, True, "2"):
        with pytest.raises(ValueError, match="processes must be 1 or 2"):
            Trainer("kuhn_poker", "cfr", "cfr", schedule="simultaneous", processes=bad)


class _NaNPolicy:
    """An opponent whose probabilities are not numbers."""

    def action_probabilities(self, infoset):
        return np.full(len(infoset.legal_mask), float("nan"))


def test_an_error_in_the_worker_is_raised_here_and_the_learner_comes_back():
    pytest.importorskip("torch")
    learner = make_learner("nfsp", "kuhn_poker", 1, SMALL, seed=3)
    opponent = make_learner("nfsp", "kuhn_poker", 0, SMALL, seed=4)
    worker = SeatWorker(learner)
    worker.step(opponent.current_policy())
    assert worker.iterations == 1
    with pytest.raises(PolicyError, match="information set"):
        worker.step(_NaNPolicy())
    assert worker.average_policy().seat == 1  # still serving after the error
    back = worker.close()
    assert back.iterations == 1 and back.own_steps > 0
    with pytest.raises(RuntimeError, match="closed"):
        worker.step(opponent.current_policy())


def test_a_dead_worker_is_a_clear_error():
    worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
    worker._process.kill()
    worker._process.join()
    with pytest.raises(SeatWorkerError, match=r"worker process .* died"):
        worker.step(make_learner("cfr", "kuhn_poker", 0).current_policy())
    with pytest.raises(SeatWorkerError, match="died"):
        worker.close()


class _InterruptAt(Callback):
    """Ctrl-C, as the run sees it, after a given iteration."""

    def __init__(self, iteration):
        self.iteration = iteration

    def on_step(self, trainer, metrics):
        if metrics["iteration"] == self.iteration:
            raise KeyboardInterrupt


def test_an_interrupted_run_brings_the_learner_back_and_resumes_as_if_never_stopped():
    options = dict(schedule="simultaneous", eval_every=None, final_eval=False, progress=False)
    reference = Trainer("kuhn_poker", "cfr", "cfr", **options)
    reference.run(iterations=6)
    trainer = Trainer("kuhn_poker", "cfr", "cfr", **options, processes=2, callbacks=_InterruptAt(3))
    with pytest.raises(KeyboardInterrupt):
        trainer.run(iterations=6)
    assert type(trainer.learners[1]) is type(reference.learners[1])
    assert [lr.iterations for lr in trainer.learners] == [3, 3]
    trainer.callbacks = as_callback(None)
    trainer.run(iterations=3)
    for ours, theirs in zip(trainer.learners, reference.learners, strict=True):
        np.testing.assert_array_equal(ours.average_policy().probs, theirs.average_policy().probs)


def test_a_work_budget_runs_with_two_processes():
    """The Trainer reads the worker's learner's work (nodes touched, env steps) as it reads a
    learner's: a work budget stops both schedules at the same iteration."""
    options = {"schedule": "simultaneous"}
    serial = Trainer("kuhn_poker", "cfr", "cfr", **options).run(work=1000)
    pair = Trainer("kuhn_poker", "cfr", "cfr", **options, processes=2).run(work=1000)
    assert (pair.stopped_by, pair.iterations) == ("work", serial.iterations)


class _KillWorkerAt(Callback):
    """The worker process killed (as by the OOM killer) after a given iteration."""

    def __init__(self, iteration):
        self.iteration = iteration

    def on_step(self, trainer, metrics):
        if metrics["iteration"] == self.iteration:
            trainer.learners[1]._process.kill()


def test_a_trainer_whose_worker_died_says_so_and_how_to_go_on(tmp_path):
    """A worker killed mid-run: the error names the kill, not a missing main guard; the trainer,
    which lost seat 1's learner, then refuses to run or save with that reason (it said
    'SeatWorker.close was called already' and 'the worker was closed; use the learner')."""
    trainer = Trainer(
        "kuhn_poker", "cfr", "cfr", schedule="simultaneous", processes=2, progress=False,
        callbacks=_KillWorkerAt(2),
    )  # fmt: skip
    with pytest.raises(SeatWorkerError, match="died") as died:
        trainer.run(iterations=5)
    assert "__main__" not in str(died.value)
    worker = trainer.learners[1]  # its pipe was left open and the dead process unreaped
    assert worker._conn.closed and worker._process.exitcode is not None
    with pytest.raises(SeatWorkerError, match="lost seat 1's learner at iteration 2"):
        trainer.run(iterations=1)
    with pytest.raises(SeatWorkerError, match="died"):
        trainer.save(tmp_path / "run.npz")


def test_a_learner_that_cannot_be_pickled_is_named_with_the_fix():
    """A user's learner holding a lambda: pickle's bare "Can't pickle local object" said
    nothing of processes=2; no process is started, and the trainer keeps its learner."""
    trainer = Trainer("kuhn_poker", "cfr", "cfr", schedule="simultaneous", processes=2)
    learner = trainer.learners[1]
    learner.hook = lambda x: x
    with pytest.raises(TypeError, match=r"processes=2 sends seat 1's learner \(cfr\).*lambdas"):
        trainer.run(iterations=1)
    assert trainer.learners[1] is learner and trainer.iteration == 0


def test_a_learner_defined_in_a_notebook_is_refused_before_its_worker_starts(monkeypatch):
    """A learner class defined in a notebook or ``python -c`` pickled here and failed in the
    worker with ``AttributeError: Can't get attribute 'CellLearner' on <module '__main__'>``,
    no word of processes=2; the worker cannot import an interactive session."""
    import types

    from nashzoo.agents import UniformLearner

    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # no __file__
    cell = type("CellLearner", (UniformLearner,), {"name": "cell", "__module__": "__main__"})
    trainer = Trainer("kuhn_poker", "cfr", "cfr", schedule="simultaneous", processes=2)
    trainer.learners = (trainer.learners[0], cell("kuhn_poker", 1))
    with pytest.raises(TypeError, match=r"learner CellLearner was defined in this interactive"):
        trainer.run(iterations=1)
    assert trainer.iteration == 0


def _interrupt_the_next_wait(worker):
    """A Ctrl-C, as the caller sees it, during the worker's next wait for a reply."""
    real_wait = worker._wait_for_reply

    def interrupted_once():
        worker._wait_for_reply = real_wait
        raise KeyboardInterrupt

    worker._wait_for_reply = interrupted_once


def test_a_ctrl_c_while_waiting_for_the_workers_step_keeps_its_learner():
    """A notebook's interrupt while the caller waited for seat 1's step: the step was marked
    done before its reply was read, so close() read that reply as the learner (``TypeError: a
    bytes-like object is required, not 'tuple'``) and seat 1's learner was lost."""
    worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
    worker.step_async(make_learner("cfr", "kuhn_poker", 0).current_policy())
    _interrupt_the_next_wait(worker)
    with pytest.raises(KeyboardInterrupt):
        worker.step_wait()
    assert worker._pending
    back = worker.close()
    assert back.iterations == 1 and back.seat == 1


def _ctrl_c_while_the_next_reply_is_read(worker, times=1):
    """SIGINT to this process ``times`` times as the worker's next reply starts to be read."""
    import os
    import signal

    conn = worker._conn
    real_recv = conn.recv_bytes

    def signalled_while_reading():
        conn.recv_bytes = real_recv
        for _ in range(times):
            os.kill(os.getpid(), signal.SIGINT)
        return real_recv()

    conn.recv_bytes = signalled_while_reading


def test_a_ctrl_c_while_a_reply_is_read_takes_effect_once_it_is_taken_whole(default_ctrl_c):
    """A second Ctrl-C (the first waits for the step) that landed while seat 1's reply was
    being read cut it mid-message: the pipe was left unreadable and the step's work unrecorded.
    It now takes effect once the reply is read and taken."""
    import signal

    worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
    opponent = make_learner("cfr", "kuhn_poker", 0).current_policy()
    worker.step_async(opponent)
    _ctrl_c_while_the_next_reply_is_read(worker)
    with pytest.raises(KeyboardInterrupt):
        worker.step_wait()
    assert not worker._pending and worker.iterations == 1  # the reply was taken
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    worker.step(opponent)
    assert worker.iterations == 2
    assert worker.close().iterations == 2


def test_a_ctrl_c_while_a_policy_is_asked_for_does_not_shift_the_replies():
    """Interrupted while it waited for a policy, the worker's reply stayed in the pipe and the
    next request read it as its own: the next step failed to unpack a policy as its
    metrics."""
    worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
    _interrupt_the_next_wait(worker)
    with pytest.raises(KeyboardInterrupt):
        worker.average_policy()
    opponent = make_learner("cfr", "kuhn_poker", 0).current_policy()
    metrics = worker.step(opponent)
    assert isinstance(metrics, dict) and worker.iterations == 1
    assert worker.average_policy().game.id == worker.game.id
    _interrupt_the_next_wait(worker)
    with pytest.raises(KeyboardInterrupt):
        worker.current_policy()
    assert worker.close().iterations == 1


def test_a_request_after_an_unread_large_reply_does_not_wait_for_ever(default_ctrl_c):
    """A Ctrl-C while a Leduc policy (about 440 KB pickled, more than a pipe holds) was asked
    for left the worker writing it; the next step's request (as large) was written while
    nobody read, so each side waited on the other, and Ctrl-C, held until the request was
    whole, could no longer break it. Unread replies are now read before a request is sent."""
    import faulthandler

    worker = SeatWorker(make_learner("cfr", "leduc_poker", 1, seed=3))
    _interrupt_the_next_wait(worker)
    with pytest.raises(KeyboardInterrupt):
        worker.average_policy()
    faulthandler.dump_traceback_later(120, exit=True)  # a hang fails the run, not the CI clock
    try:
        worker.step(make_learner("cfr", "leduc_poker", 0).average_policy())
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert worker.close().iterations == 1


def test_a_reply_that_cannot_be_unpickled_here_keeps_the_worker_in_step():
    """A reply read whole that failed to unpickle in the caller (a class the caller cannot
    rebuild) left the count of unread replies one too high: the next request waited for
    ever, or close() dropped the learner as a stale reply and called the worker dead."""
    worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
    conn = worker._conn
    real_recv = conn.recv_bytes

    def garbled_once():
        conn.recv_bytes = real_recv
        real_recv()  # the step's reply, read and lost to the caller
        return b"not a pickle"

    conn.recv_bytes = garbled_once
    with pytest.raises(SeatWorkerError, match="could not be unpickled in this process"):
        worker.step(make_learner("cfr", "kuhn_poker", 0).current_policy())
    assert not worker._pending
    assert worker.current_policy().game.id == "kuhn_poker"  # the next request: its own reply
    assert worker.close().iterations == 1  # the step happened in the worker


def test_a_ctrl_c_while_a_step_is_sent_leaves_it_pending(default_ctrl_c):
    """A Ctrl-C held through the step's request took effect before the step was marked
    pending: step_wait() then said there was no step, and the learner stepped twice where
    the caller saw one step."""
    import os
    import signal

    worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
    conn = worker._conn
    real_send = conn.send

    def signalled_while_sending(message):
        conn.send = real_send
        os.kill(os.getpid(), signal.SIGINT)
        return real_send(message)

    conn.send = signalled_while_sending
    opponent = make_learner("cfr", "kuhn_poker", 0).current_policy()
    with pytest.raises(KeyboardInterrupt):
        worker.step_async(opponent)
    assert worker._pending
    worker.step_wait()
    assert worker.iterations == 1
    assert worker.close().iterations == 1


def test_a_ctrl_c_while_the_learner_comes_back_keeps_it(default_ctrl_c, monkeypatch):
    """A Ctrl-C while close() read the learner back lost it, though it had arrived whole: the
    trainer kept the closed SeatWorker as seat 1 and the next run said its worker had died."""
    import os
    import signal

    real_take_back = SeatWorker._take_back

    def signalled_while_taking_back(self, reply):
        os.kill(os.getpid(), signal.SIGINT)
        return real_take_back(self, reply)

    monkeypatch.setattr(SeatWorker, "_take_back", signalled_while_taking_back)
    trainer = Trainer(
        "kuhn_poker",
        "cfr",
        "cfr",
        schedule="simultaneous",
        processes=2,
        eval_every=None,
        final_eval=False,
        progress=False,
    )
    with pytest.raises(KeyboardInterrupt):
        trainer.run(iterations=3)
    assert not isinstance(trainer.learners[1], SeatWorker)
    assert [learner.iterations for learner in trainer.learners] == [3, 3]
    monkeypatch.setattr(SeatWorker, "_take_back", real_take_back)
    trainer.run(iterations=2)
    assert trainer.iteration == 5


def test_a_ctrl_c_while_close_waits_for_a_step_says_so_and_why_the_learner_is_lost(
    capfd, monkeypatch, tmp_path
):
    """After a second Ctrl-C cut a step short, close() waited for seat 1's step in flight
    without a word, so another Ctrl-C (a step of seconds reads as a hang) stopped the worker
    and the learner with it; the next run() then said the worker process had died. The wait
    is now said, with what another Ctrl-C costs, and a learner lost that way is named so."""
    trainer = Trainer(
        "kuhn_poker", "cfr", "cfr", schedule="simultaneous", processes=2, eval_every=None,
        final_eval=False, progress=False,
    )  # fmt: skip
    real_wait = SeatWorker._wait_for_reply

    def cut_from_the_second_step_on(self):
        if trainer.iteration >= 1 and (self._pending or self._closed):
            raise KeyboardInterrupt  # as a second Ctrl-C does, at once
        return real_wait(self)

    monkeypatch.setattr(SeatWorker, "_wait_for_reply", cut_from_the_second_step_on)
    monkeypatch.setattr(SeatWorker, "_reply_waiting", lambda self: False)  # a step of seconds
    with pytest.raises(KeyboardInterrupt):
        trainer.run(iterations=3)
    assert "waiting for seat 1's step in its worker process to finish" in capfd.readouterr().err
    worker = trainer.learners[1]
    assert isinstance(worker, SeatWorker) and not worker._process.is_alive()
    assert "a Ctrl-C came while seat 1's learner (cfr) was waited for" in worker.lost
    with pytest.raises(SeatWorkerError, match=r"lost seat 1's learner at iteration 1 .*Ctrl-C"):
        trainer.run(iterations=1)
    with pytest.raises(SeatWorkerError, match="a Ctrl-C came"):
        trainer.save(tmp_path / "run.npz")
    assert not (tmp_path / "run.npz").exists()


def test_close_says_nothing_when_no_step_is_in_flight(capfd):
    """Nor when the step's reply is in the pipe already: there is nothing to wait for."""
    import time

    worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
    opponent = make_learner("cfr", "kuhn_poker", 0).current_policy()
    worker.step(opponent)
    worker.step_async(opponent)
    deadline = time.monotonic() + 60
    while not worker._reply_waiting() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker._pending and worker._reply_waiting()
    assert worker.close().iterations == 2 and worker.lost is None
    assert capfd.readouterr().err == ""


def test_two_ctrl_cs_while_a_reply_is_read_are_two(monkeypatch):
    """Held while a message was read, two Ctrl-Cs reached the handler as one: the second,
    which interrupts at once, was lost."""
    import signal

    calls = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        worker = SeatWorker(make_learner("cfr", "kuhn_poker", 1, seed=3))
        _ctrl_c_while_the_next_reply_is_read(worker, times=2)
        worker.step(make_learner("cfr", "kuhn_poker", 0).current_policy())
        assert calls == [signal.SIGINT, signal.SIGINT]
        assert worker.close().iterations == 1
    finally:
        signal.signal(signal.SIGINT, previous)


def _two_ctrl_cs_as_the_second_reply_is_taken(monkeypatch):
    """SIGINT twice to this process as seat 1's second step reply is taken (read whole)."""
    import os
    import signal

    real_stepped = SeatWorker._stepped

    def two_ctrl_cs_in_the_second_step(self, reply):
        if self.iterations == 1:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return real_stepped(self, reply)

    monkeypatch.setattr(SeatWorker, "_stepped", two_ctrl_cs_in_the_second_step)


def test_a_second_ctrl_c_while_seat_1s_reply_is_taken_leaves_the_trainer_in_step(
    default_ctrl_c, monkeypatch, tmp_path
):
    """A first Ctrl-C waits for the step; a second one that came while seat 1's reply was
    read took effect once it was taken, after both seats had stepped, but before the trainer
    counted the iteration: it then called itself torn and refused to save or go on. The
    iteration is now counted, and the run goes on from where it was interrupted."""
    _two_ctrl_cs_as_the_second_reply_is_taken(monkeypatch)
    options = dict(schedule="simultaneous", eval_every=None, final_eval=False, progress=False)
    trainer = Trainer("kuhn_poker", "cfr", "cfr", **options, processes=2)
    with pytest.raises(KeyboardInterrupt):
        trainer.run(iterations=5)
    assert trainer.iteration == 2
    assert [learner.iterations for learner in trainer.learners] == [2, 2]
    trainer.save(tmp_path / "run.npz")  # in step: nothing refused
    monkeypatch.undo()  # the Ctrl-Cs no more
    trainer.run(iterations=1)
    reference = Trainer("kuhn_poker", "cfr", "cfr", **options)
    reference.run(iterations=3)
    for ours, theirs in zip(trainer.learners, reference.learners, strict=True):
        np.testing.assert_array_equal(ours.average_policy().probs, theirs.average_policy().probs)


def test_a_ctrl_c_held_through_a_failed_steps_reply_leaves_the_iteration_uncounted(
    default_ctrl_c, monkeypatch, tmp_path
):
    """Seat 1's step failed in its worker while a second Ctrl-C was held through the read of
    its reply: the Ctrl-C went on in place of the error, and the trainer, reading "no step in
    flight" as "seat 1 stepped", counted an iteration seat 1 never did. It saved a checkpoint
    that Trainer.load then refused (seat 1 at 1 iteration, the trainer at 2). The iteration is
    counted only when seat 1's step was done; otherwise the trainer is torn and says so."""

    options = dict(schedule="simultaneous", eval_every=None, final_eval=False, progress=False)
    trainer = Trainer("kuhn_poker", "cfr", "cfr", **options, processes=2)
    seat0 = trainer.learners[0]
    real_current = type(seat0).current_policy

    def poisoned(self):  # seat 1's opponent in iteration 2: its step raises PolicyError
        return _NaNPolicy() if trainer.iteration == 1 else real_current(self)

    monkeypatch.setattr(type(seat0), "current_policy", poisoned)
    _two_ctrl_cs_as_the_second_reply_is_taken(monkeypatch)
    with pytest.raises(KeyboardInterrupt) as caught:
        trainer.run(iterations=5)
    assert isinstance(caught.value.__context__, PolicyError)
    assert trainer.iteration == 1
    assert [learner.iterations for learner in trainer.learners] == [2, 1]
    with pytest.raises(RuntimeError, match=r"iteration 2 was cut short .* after seat 0 had"):
        trainer.save(tmp_path / "run.npz")


def _not_picklable(x):
    return x


class _HookedCFR(CFR):
    """A learner that picks up something pickle refuses while it trains (a lambda)."""

    def step(self, opponent):
        metrics = super().step(opponent)
        self.hook = lambda x: _not_picklable(x)
        return metrics


class _SlowToPickleCFR(CFR):
    """A learner that takes 2 s to pickle (a large one: replay buffers, big tables)."""

    def __getstate__(self):
        import time

        time.sleep(2.0)
        return self.__dict__


class _SlowCFR(CFR):
    """A learner whose steps take 20 s from the second on (a neural learner's long step)."""

    def step(self, opponent):
        import time

        if self.iterations >= 1:
            time.sleep(20.0)
        return super().step(opponent)


_OPTIONS = dict(schedule="simultaneous", eval_every=None, final_eval=False, progress=False)


def test_a_learner_that_cannot_be_pickled_back_comes_back_through_its_checkpoint():
    """A learner that picked up a lambda while it trained could not be pickled back at the
    end of a processes=2 run: it was lost, the next run() said its worker process had died,
    and save() said to "use the learner". It now comes back through its checkpoint, as
    Trainer.load would rebuild it, with a warning that says so."""
    trainer = Trainer("kuhn_poker", "cfr", "cfr", **_OPTIONS, processes=2)
    trainer.learners = (trainer.learners[0], _HookedCFR("kuhn_poker", 1))
    with pytest.warns(UserWarning, match="could not be pickled back .* rebuilt from its check"):
        trainer.run(iterations=3)
    assert not isinstance(trainer.learners[1], SeatWorker)
    assert [learner.iterations for learner in trainer.learners] == [3, 3]
    reference = Trainer("kuhn_poker", "cfr", "cfr", **_OPTIONS)
    reference.run(iterations=3)
    for ours, theirs in zip(trainer.learners, reference.learners, strict=True):
        np.testing.assert_array_equal(ours.average_policy().probs, theirs.average_policy().probs)


def test_a_double_ctrl_c_while_the_learner_is_pickled_back_keeps_it(default_ctrl_c, capfd):
    """Ctrl-C pressed twice: the first, outside a step, ended the run at once; the second came
    while close() waited for the idle learner to be pickled back (half a second on Leduc) and
    gave it up, with no word of what a Ctrl-C there costs. The first Ctrl-C in that wait is
    now held with that word, and the learner comes back before it goes on."""
    import os
    import signal
    import threading

    class _CtrlCAfterTwo(Callback):
        def on_step(self, trainer, metrics):
            if metrics["iteration"] == 2:
                threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
                raise KeyboardInterrupt  # the first, outside a step: at once

    trainer = Trainer(
        "kuhn_poker", "cfr", "cfr", **_OPTIONS, processes=2, callbacks=_CtrlCAfterTwo()
    )
    trainer.learners = (trainer.learners[0], _SlowToPickleCFR("kuhn_poker", 1))
    with pytest.raises(KeyboardInterrupt):
        trainer.run(iterations=5)
    assert "waiting for seat 1's learner to come back" in capfd.readouterr().err
    assert not isinstance(trainer.learners[1], SeatWorker)
    assert [learner.iterations for learner in trainer.learners] == [2, 2]


def test_a_learner_given_up_in_its_step_is_stopped_at_once():
    """After "Ctrl-C again to abandon it", close() waited a silent 10 s for the worker, busy
    in its step, to exit, before it killed it."""
    import time

    worker = SeatWorker(_SlowCFR("kuhn_poker", 1))
    opponent = make_learner("cfr", "kuhn_poker", 0).current_policy()
    worker.step(opponent)
    worker.step_async(opponent)  # 20 s
    _interrupt_the_next_wait(worker)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        worker.close()
    assert time.monotonic() - start < 5
    assert not worker._process.is_alive() and "a Ctrl-C came" in worker.lost
