"""Helpers of the picture tests: render under Agg and return the PNG bytes."""

from __future__ import annotations

from io import BytesIO
from typing import Any

import matplotlib

# The pictures use the object API only; forcing Agg here guards that nothing needs a display.
matplotlib.use("Agg")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png(fig: Any) -> bytes:
    """Render ``fig`` to PNG and return the bytes (checked to be a PNG)."""
    buffer = BytesIO()
    fig.savefig(buffer, format="png")
    data = buffer.getvalue()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000, "not a rendered PNG"
    return data
