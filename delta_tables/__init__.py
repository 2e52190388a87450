"""Delta adapters: settings, table locations, catalog registration and time-travel reads."""

from __future__ import annotations

from delta_tables.catalog import current_version, read_table, register_tables, table_properties
from delta_tables.settings import Settings, TableConf, load_settings

__all__ = ["Settings", "TableConf", "current_version", "load_settings", "read_table",
           "register_tables", "table_properties"]
