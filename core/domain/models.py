"""``built`` and ``builder``: pydantic models from values computed here, not validated again.

A leaf (pydantic only): the parse sandbox imports ``chunks``, which builds passages with it,
and the sandbox runs under an address-space cap; when ``built`` lived in ``bm25`` the sandbox
imported numpy with it and a worker with the small cap of
``test_a_pdf_that_needs_more_memory_than_the_worker_has_is_refused_and_the_next_file_reads``
died before reading its request. Rejected: importing it lazily in ``chunks`` (every passage
would pay the lookup, and the next import of a heavy module would not be caught by a rule).
``builder`` is ``built`` for one frozen class and its shared fields set, checked once: a
search's passage copies and results (``memory.kept``, ``ranking``) are built by one each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

_Model = TypeVar("_Model", bound=BaseModel)


def built(cls: type[_Model], values: dict[str, Any], fields: set[str] | None = None) -> _Model:
    """``cls.model_construct(**values)`` for ``values`` naming every field, typed already.

    What ``model_construct`` does for such values, without its per-field default handling:
    a fifth of its cost (0.7 against 3.5 us), which mattered for the explanations of a
    search (one model per term per result). Only for values computed here with their
    declared types; anything from outside is validated.

    ``fields``: a FROZEN model's fields set, shared by every model the caller builds (the keys
    of ``values``): pydantic keeps a set per model, ~730 bytes, more than a tiny passage's own
    fields; nothing mutates it (a frozen model refuses assignment, and ``model_copy`` copies
    the set before adding to it).
    """
    if fields is not None and not cls.model_config.get("frozen"):
        raise ValueError(f"{cls.__name__} is not frozen: its fields set cannot be shared")
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values) if fields is None else fields)
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def builder(
    cls: type[_Model], fields: set[str]
) -> Callable[[dict[str, Any], dict[str, Any] | None], _Model]:
    """``built`` for one FROZEN model class and one shared fields set, checked once here: the
    function it returns takes the values and the private attributes (None for none), and costs
    ~0.25 us a model less than ``built`` (its check and lookups per call): ten passages and ten
    results a search."""
    if not cls.model_config.get("frozen"):
        raise ValueError(f"{cls.__name__} is not frozen: its fields set cannot be shared")
    new, put = cls.__new__, object.__setattr__

    def build(values: dict[str, Any], private: dict[str, Any] | None) -> _Model:
        model = new(cls)
        put(model, "__dict__", values)
        put(model, "__pydantic_fields_set__", fields)
        put(model, "__pydantic_extra__", None)
        put(model, "__pydantic_private__", private)
        return model

    return build
