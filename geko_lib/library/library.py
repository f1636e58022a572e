"""The original's ``geko/library/library.py`` (its README's package layout: "Library and
LibraryCollection classes"), so ``from geko.library.library import Library, LibraryCollection``
finds them: the same classes as ``geko.library.Library`` / ``LibraryCollection``, not copies."""

from .collection import LibraryCollection  # noqa: F401
from .logic import LibraryLogic as Library  # noqa: F401
