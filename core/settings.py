"""Configuration from the environment (``LEXPLAIN_*``), read once by the app.

pydantic-settings rather than ``os.environ`` scattered over pages: one typed,
validated place, so a wrong value fails at start with the variable's name, not
later in a page. The store is chosen by one variable: unset means the
in-memory store (lost on restart), a URL means PostgreSQL.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.chunks import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from core.readers import DEFAULT_MAX_BYTES

#: Default largest accepted upload per file, in megabytes: the readers' own limit.
DEFAULT_MAX_UPLOAD_MB = DEFAULT_MAX_BYTES // (1024 * 1024)


class Settings(BaseSettings):
    """What an operator can set; every field maps to ``LEXPLAIN_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="LEXPLAIN_", extra="ignore")

    #: PostgreSQL DSN; None keeps passages in memory. Secret: never printed.
    database_url: SecretStr | None = None
    #: PostgreSQL schema to keep the tables in (None: the server's search_path, usually public).
    database_schema: str | None = None
    #: Largest accepted file, in megabytes (Streamlit's own upload limit is set separately).
    max_upload_mb: int = Field(default=DEFAULT_MAX_UPLOAD_MB, ge=1)
    chunk_size: int = Field(default=DEFAULT_CHUNK_SIZE, ge=50)
    chunk_overlap: int = Field(default=DEFAULT_CHUNK_OVERLAP, ge=0)
    #: Seconds a page waits for one store call before giving up with an error.
    call_timeout_s: float = Field(default=120.0, gt=0)

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024


def describe_store(database_url: str | None) -> str:
    """A safe label for the active store: never the user name or password."""
    if not database_url:
        return "in-memory (lost on restart)"
    parts = urlsplit(database_url)
    database = parts.path.lstrip("/") or "postgres"
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"PostgreSQL {database}@{host}{port}"
