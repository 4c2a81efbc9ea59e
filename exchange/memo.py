"""A cache for functions of an order's stored text that keeps only short texts.

Why: such caches (the parsed constraints a matching cycle reads, an offer's pricing rule)
were bounded by their number of entries only. Orders' texts are almost all a few hundred
characters, but one near the language's limits (10,000 characters, 256 predicates) parses
to some 100 KB of objects, so a cache of 200,000 of those, which amending one bid with new
texts could bring in, would have held gigabytes. A text longer than ``KEPT_TEXT_MAX`` is
worked out at each call instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

R = TypeVar("R")

KEPT_TEXT_MAX = 512


class ShortTextCache(Generic[R]):
    """``function(text, *args)``, its results kept (``functools.lru_cache``, ``maxsize``
    of them) for texts of at most ``longest`` characters."""

    def __init__(self, function: Callable[..., R], *, maxsize: int, longest: int) -> None:
        functools.update_wrapper(self, function)
        self.function = function
        self.longest = longest
        self._kept = functools.lru_cache(maxsize=maxsize)(function)

    def __call__(self, text: str, *args: Hashable) -> R:
        if len(text) > self.longest:
            return self.function(text, *args)
        return self._kept(text, *args)

    def cache_info(self) -> Any:
        return self._kept.cache_info()

    def cache_clear(self) -> None:
        self._kept.cache_clear()


def short_text_cache(
    *, maxsize: int, longest: int = KEPT_TEXT_MAX
) -> Callable[[Callable[..., R]], ShortTextCache[R]]:
    """``ShortTextCache`` as a decorator."""
    return lambda function: ShortTextCache(function, maxsize=maxsize, longest=longest)
