"""What an index row's previews become as cells, taken when the row is observed (row_cells.py).

`preview_cells(messages)` gives each preview's identity encoding (the planner's rule:
element_identity.natural_identity) and its fvj1 text, which is all the commit needs to
name and write the preview cells without decoding the previews again; None when the
previews need the planner's general rules (a preview that is not a flat object, one
with no identity of its own, two previews of one identity).
"""

from __future__ import annotations

from typing import Any

from lib.fabric import values
from lib.fabric.element_identity import natural_identity
from lib.hashing import encode_value

LEAF_TYPES = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})


def preview_cells(messages: Any) -> tuple[list[bytes], list[str]] | None:
    """Each preview's identity encoding and fvj1 text, in order; None when the
    planner's general rules are needed (see the module's docstring)."""
    if type(messages) is not list and type(messages) is not tuple:
        return None
    encodings: list[bytes] = []
    texts: list[str] = []
    leaf, keys = LEAF_TYPES.issuperset, _STR.issuperset
    for message in messages:
        if type(message) is not dict or not leaf(map(type, message.values())) or not keys(map(type, message)):
            return None
        found = message.get("id")
        if type(found) is str and found and "key" not in message:
            identity: dict[str, Any] | None = {"field": "id", "value": found}  # rule 1, as natural_identity
        else:
            identity = natural_identity(message)
            if identity is None:  # a content-hash identity: left to the planner
                return None
        encodings.append(encode_value(identity))
        texts.append(values.dumps(message))
    if len(set(encodings)) != len(encodings):  # siblings of one identity: collision rules
        return None
    return encodings, texts
