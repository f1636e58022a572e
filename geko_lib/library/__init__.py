"""Tensile library logic, the common currency between phases: the model and its files
(``logic``, ``codec``), library operations (``operations``), pruning (``prune``) and integration
exports (``exports``).

The names of the original tool's Python API are kept: ``load_library``, ``load_collection``,
``merge_solutions``, ``extract_solutions``, ``from_dataframe``, and the methods ``trim()``,
``add_epilogues()``, ``create_bench_input()`` and ``dump()`` of a library.
"""

from .logic import *  # noqa: F401,F403
from .logic import LibraryError, LibraryLogic, load, load_dir
from .operations import (add_epilogues, extract_solutions, from_dataframe, full_libs,  # noqa: F401
                         load_match_table, match_table_reference, merge_solutions, normalize,
                         prune_library, ship_kept, trim, write_collection)

Library = LibraryLogic
load_library = load
load_collection = load_dir
