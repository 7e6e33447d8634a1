"""Stores: one port (``port.ChunkStore``), an in-memory reference, and PostgreSQL."""
