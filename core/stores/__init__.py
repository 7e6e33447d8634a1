"""Stores: one port (``port.ChunkStore``), an in-memory reference, and PostgreSQL.

Modules:

- ``checks``: What every store checks in a batch before it writes any of it, apart from the port
- ``select``: Open the store the settings name: one definition for the app's service and the …
- ``postgres/``: The PostgreSQL chunk store: passages plus posting blocks, on an asyncpg pool
"""
