"""Constants (the standard's chapter of that name)."""

from __future__ import annotations

__all__: list[str] = []
