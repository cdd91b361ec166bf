"""nashzoo: imperfect-information games as PettingZoo environments, learners behind one
interface, and exact answers about how close they get to a Nash equilibrium, and how fast."""

from nashzoo.games import compile_tree, load_game

__version__ = "0.1.0"
__all__ = ["__version__", "compile_tree", "load_game"]
