"""Tensile library logic, the common currency between phases (the original's
``geko.library``): ``Library`` and ``LibraryCollection``, ``operations`` (load_library,
load_collection, merge_solutions, extract_solutions, create, from_dataframe, from_full_dataframe,
merge, prune_library),
pruning (``prune``) and integration exports (``exports``).

``Library`` is geko's library-logic model: ``lib.sizes`` is its assignable ExactLogic list and
``trim()``, ``add_epilogues()``, ``create_bench_input()`` and ``dump()`` are its methods, as in the
original; a ``LibraryCollection`` is a dict of them by file name with the same methods.
"""

from . import operations  # noqa: F401
from .collection import LibraryCollection, load_dir  # noqa: F401
from .logic import *  # noqa: F401,F403
from .logic import LibraryError, LibraryLogic, load  # noqa: F401
from .operations import (add_epilogues, create, extract_solutions, from_dataframe,
                         from_full_dataframe, full_libs, load_collection, load_library,
                         load_match_table, match_table_reference, merge, merge_solutions,
                         normalize, prune_library, prune_with_sweep, ship_kept, trim,
                         write_collection)

Library = LibraryLogic
