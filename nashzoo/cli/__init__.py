"""``nashzoo``: the command line, one module per command (``race``, ``train`` with ``duel``,
``evaluate``, ``tournament``, ``play``, ``catalog`` for ``games``/``learners``/``solve``), what
they share in ``common``, and the entry point in ``main``.

``nashzoo race``        which learners converge, and how fast (the main job)
``nashzoo train``       train one learner (self-play) or a pair, to a checkpoint
``nashzoo eval``        exact NashConv / exploitability of a policy file or checkpoint
``nashzoo tournament``  round robin between saved agents and built-ins
``nashzoo duel``        two different algorithms learning against each other, live
``nashzoo play``        play an agent yourself in the terminal
``nashzoo games``       the games: parameters, players, sizes; one game's exact value
``nashzoo learners``    the learners: kind, extras needed; one learner's settings
``nashzoo solve``       a two-player zero-sum game's exact equilibrium, to a policy file

Bad arguments give a one-line error and a non-zero exit status, never a traceback: 2 for
malformed options (caught while parsing), 1 for values the library refuses while running (an
unknown learner, an unreadable or foreign file) and for any failure inside a command (an
unexpected one says so and points to ``--debug``, which shows the traceback instead).
"""

from nashzoo.cli.common import GAME_HELP, UsageError
from nashzoo.cli.main import build_parser, main

__all__ = ["GAME_HELP", "UsageError", "build_parser", "main"]
