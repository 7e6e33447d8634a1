"""Configuration from the environment (``LEXPLAIN_*``), read once by the app.

pydantic-settings rather than ``os.environ`` scattered over pages: one typed,
validated place, so a wrong value fails at start with the variable's name, not
later in a page.

The store: ``LEXPLAIN_DATABASE_URL`` set means that PostgreSQL server; otherwise the
embedded PostgreSQL on ``LEXPLAIN_DATA_DIR`` (default ``.lexplain`` in the project folder),
so what a user uploads is kept without any setup; ``LEXPLAIN_STORE=memory`` keeps passages
in memory (tests, demos). Rejected: in-memory as the default, which lost an afternoon's
uploads at the first restart. Setting both a URL and ``LEXPLAIN_STORE=memory`` or
``embedded`` is refused at start rather than one silently winning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.domain.chunks import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, DEFAULT_MAX_BYTES

#: The project folder (where app.py lives): the default data directory is inside it.
PROJECT_DIR = Path(__file__).resolve().parents[1]
#: Where lexplain keeps its data unless LEXPLAIN_DATA_DIR says otherwise (git-ignored).
DEFAULT_DATA_DIR = PROJECT_DIR / ".lexplain"
#: The stores an operator can name in LEXPLAIN_STORE.
StoreKind = Literal["embedded", "postgres", "memory"]

#: Default largest accepted upload per file, in megabytes: the readers' own limit.
DEFAULT_MAX_UPLOAD_MB = DEFAULT_MAX_BYTES // (1024 * 1024)


#: Passage slots the PostgreSQL store's workspace images may hold in all (~140 B each: about
#: 280 MB, and up to 128 B more each for the common terms' postings an image keeps,
#: ``kept_postings``); unbounded, a server opening many large workspaces in turn kept every one.
DEFAULT_IMAGE_CACHE_PASSAGES = 2_000_000


class Settings(BaseSettings):
    """What an operator can set; every field maps to ``LEXPLAIN_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="LEXPLAIN_", extra="ignore")

    #: PostgreSQL DSN of a server you run; None uses the embedded server. Secret: never printed.
    database_url: SecretStr | None = None
    #: Which store; None means "postgres" when a URL is set, else "embedded".
    store: StoreKind | None = None
    #: Folder of the embedded server's data (a relative path is taken from the working directory).
    data_dir: Path = DEFAULT_DATA_DIR
    #: PostgreSQL schema to keep the tables in (None: the server's search_path, usually public).
    database_schema: str | None = None
    #: Largest accepted file, in megabytes (Streamlit's own upload limit is set separately).
    max_upload_mb: int = Field(default=DEFAULT_MAX_UPLOAD_MB, ge=1)
    chunk_size: int = Field(default=DEFAULT_CHUNK_SIZE, ge=50)
    chunk_overlap: int = Field(default=DEFAULT_CHUNK_OVERLAP, ge=0)
    #: Seconds a page waits for one store call before giving up with an error.
    call_timeout_s: float = Field(default=120.0, gt=0)
    #: Passages the PostgreSQL store's per-workspace images (ordinal -> id, length) may hold in
    #: all; the least recently searched workspace's image is dropped first (~140 B a passage).
    image_cache_passages: int = Field(default=DEFAULT_IMAGE_CACHE_PASSAGES, ge=0)

    @model_validator(mode="after")
    def _one_store(self) -> Settings:
        if self.store == "postgres" and self.database_url is None:
            raise ValueError("LEXPLAIN_STORE=postgres needs LEXPLAIN_DATABASE_URL (a server URL)")
        if self.store in ("memory", "embedded") and self.database_url is not None:
            raise ValueError(
                f"LEXPLAIN_STORE={self.store} and LEXPLAIN_DATABASE_URL are both set: "
                "unset one of them"
            )
        return self

    @property
    def store_kind(self) -> StoreKind:
        """The store in use: explicit, else PostgreSQL with a URL, else the embedded server."""
        if self.store is not None:
            return self.store
        return "postgres" if self.database_url is not None else "embedded"

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024


def describe_store(settings: Settings) -> str:
    """A safe label for the active store and where its data lives: never a user or password."""
    kind = settings.store_kind
    if kind == "memory":
        return "in-memory (lost on restart)"
    if kind == "embedded":
        return f"PostgreSQL (embedded, {display_path(settings.data_dir / 'pgdata')})"
    assert settings.database_url is not None  # the validator guarantees it
    parts = urlsplit(settings.database_url.get_secret_value())
    database = parts.path.lstrip("/") or "postgres"
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"PostgreSQL {database}@{host}{port}"


def display_path(path: Path) -> str:
    """A path as a user would type it: relative to the project folder when inside it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(PROJECT_DIR).as_posix()
    except ValueError:
        return str(resolved)
