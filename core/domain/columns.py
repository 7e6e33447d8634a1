"""``LexicalCandidates`` from the kernel's own columns, without validating them again.

The query kernel (``core.domain.postings``) builds a read's columns itself, typed and shaped as
the model declares them; pydantic's validation of them (its arbitrary-type checks and
``_columns_agree``) is part of the fixed cost of every read: 8.9 us against 2.7 here, measured
apart (a 10k-passage search is ~0.3 ms). ``candidates_of`` does what that validation does to
such columns (the defaults, the arrays frozen, ``matching`` at least the rows) and no check.
Anything from outside the kernel still goes through ``LexicalCandidates(...)``. Rejected: a
``model_construct`` (8.5 us: its per-field default handling in Python costs what validation
does, and it runs no after-validator, so the arrays would stay writable; the kernel once built
its candidates so, ``_columns_agree`` run after, and measured that slower than validating).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from core.domain.ranking import LexicalCandidates

#: The fields with a default, and whether it is made by a factory (a fresh array each time).
_DEFAULTS: Final = {
    name: (info.default_factory, info.default)
    for name, info in LexicalCandidates.model_fields.items()
    if not info.is_required()
}


def candidates_of(**fields: Any) -> LexicalCandidates:
    """``LexicalCandidates(**fields)`` for columns the kernel computed (numpy arrays of the
    declared dtypes, one entry per row, ``tfs`` of shape (rows, terms)): the same model,
    arrays frozen as the validator freezes them, built without re-validating."""
    values = dict(fields)
    for name, (factory, default) in _DEFAULTS.items():
        if name not in values:
            values[name] = factory() if factory is not None else default  # type: ignore[call-arg]
    n = len(values["id_order"])
    if n == 0 and values["tfs"].size == 0:
        values["tfs"] = np.zeros((0, len(values["terms"])), dtype=np.int64)
    per_row = values["id_pool"] if values["id_rows"] is None else values["id_rows"]
    frozen = [per_row, values["id_order"], values["doc_lengths"], values["tfs"]]
    if values["id_rows"] is None:
        frozen.append(values["source_pool"])
    for array in frozen:
        array.flags.writeable = False
    if values["matching"] < n:
        values["matching"] = n
    model = LexicalCandidates.__new__(LexicalCandidates)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(fields))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", {"_scored": None})
    return model


__all__ = ["candidates_of"]
