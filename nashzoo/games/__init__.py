"""Game rules: the only place rules live (numpy only; no gym, no torch)."""

from nashzoo.games.base import (
    CHANCE,
    TERMINAL,
    Game,
    GameDefinitionError,
    GameTooLarge,
    IllegalActionError,
    State,
    display_id,
    display_ids_apart,
)
from nashzoo.games.cache import clear_caches
from nashzoo.games.kuhn import KuhnPokerGame
from nashzoo.games.leduc import LeducPokerGame
from nashzoo.games.liars_dice import LiarsDiceGame
from nashzoo.games.matrix import PRESETS as MATRIX_PRESETS
from nashzoo.games.matrix import MatrixGame
from nashzoo.games.openspiel import OpenSpielGame, OpenSpielState
from nashzoo.games.registry import (
    game_names,
    load_game,
    parse_game_spec,
    register_game,
    unregister_game,
)
from nashzoo.games.tree import CompiledTree, compile_tree

__all__ = [
    "CHANCE",
    "MATRIX_PRESETS",
    "TERMINAL",
    "CompiledTree",
    "Game",
    "GameDefinitionError",
    "GameTooLarge",
    "IllegalActionError",
    "KuhnPokerGame",
    "LeducPokerGame",
    "LiarsDiceGame",
    "MatrixGame",
    "OpenSpielGame",
    "OpenSpielState",
    "State",
    "clear_caches",
    "compile_tree",
    "display_id",
    "display_ids_apart",
    "game_names",
    "load_game",
    "parse_game_spec",
    "register_game",
    "unregister_game",
]
