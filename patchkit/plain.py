"""Result dataclasses as JSON-ready values: what every report and `.patchkit/last-apply.json` hold.

It lives below the pipeline and the renderers alike, so that recording a result never imports the
renderers (`report/`), which sit above everything they render.
"""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Any

NOT_IN_JSON = {"json": False}  # dataclasses.field(metadata=NOT_IN_JSON)


def plain(obj: Any) -> Any:
    """Dataclasses, enums and paths as JSON-ready values (field order kept). A field whose
    metadata says `NOT_IN_JSON` is left out (file bytes, which JSON cannot hold)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.metadata.get("json", True)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = [plain(v) for v in obj]
        return sorted(items) if isinstance(obj, (set, frozenset)) else items
    return obj
