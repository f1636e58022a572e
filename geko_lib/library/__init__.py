"""Tensile library logic, the common currency between phases: the model (``logic``), library
operations (``operations``), pruning (``prune``) and integration exports (``exports``)."""

from .logic import *  # noqa: F401,F403
from .logic import LibraryError, LibraryLogic  # noqa: F401
