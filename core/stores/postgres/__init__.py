"""The PostgreSQL chunk store: passages plus posting blocks, on an asyncpg pool.

Why our own postings and not PostgreSQL's full-text search: BM25 needs tf, df, N and
avgdl exactly as the in-memory reference computes them, from the one shared tokenizer;
``tsvector`` has its own parser and stemming and ``ts_rank`` is not BM25, so rankings
would differ (and it measured slower, see docs/scaling.md).

Why blocks and not a row per posting: the term table (tenant, term, chunk, tf) made a
query aggregate every posting of its terms row by row (GROUP BY chunk over ~2M rows for
a Zipf query at 1M passages: ~1.5 s at best), and made a load insert ~80 index entries
per passage. Now every passage gets an ordinal (per tenant, never reused) and each batch
written becomes a segment: per (tenant, term, segment) one row holding the ordinals and
tf of that term as big-endian int32 arrays (Lucene-style). A query reads a few rows per
term and does counts, truncation order and tf columns with numpy, on the same rows and
by the same rule as the in-memory store, so the two hand identical columns to ranking.
Segments of one size tier are merged when ``MERGE_FACTOR`` accumulate. A deleted passage
is a tombstone by absence: its ordinals stay in the blocks until nothing reads them,
because readers map ordinals through an image of the live passages (``query_read.Image``, read
again only when the tenant's generation moved). df and counters stay maintained tables,
written in the same transaction as every write. Only the likely shown passages' text
crosses the wire (``PREFETCH_ROWS``, in the read's snapshot); any other is looked up on
a side connection (``lookups.SideReader``).
Writes stage passage rows with COPY and move them with INSERT ... SELECT inside the
transaction; blocks are COPYed straight into their table. ``replace_sources`` writes many
documents in one such transaction, which is how ``load`` reaches COPY speed.

Each tenant is tokenised with its workspace's profile (``workspaces.profile``).
A write stages its rows under the profile it read, then, inside its transaction,
takes the workspace row FOR SHARE and checks the profile is still that one (else
stages again); ``reindex`` takes the row FOR UPDATE and rewrites the posting
blocks, lengths, df and counters in one transaction, so writes wait for it and readers
see the old index (MVCC) until it commits. Building the new index in shadow
tables and renaming them would keep writes going during a re-index, at the cost
of a second schema per tenant; one transaction is simpler and exactly as atomic.

Reads of one query happen in one REPEATABLE READ read-only transaction, so the
statistics, the document frequencies, the blocks, the image and the prefetched
passages come from one snapshot.
Calls are retried on a lost connection (a server restart, a killed backend):
reads trivially, writes because they are one transaction, idempotent by key. Every call
is bounded (see ``resilience.Calls.attempt``); after the retries a write fails with
``ConnectionLost`` saying in plain words that nothing of it was stored.

The package, one module per job: ``schema`` (tables and migrations at connect),
``resilience`` (timeouts, retries, the cause-chain walker), ``blocks`` (pure numpy block
building and decoding, unit-tested without a server), ``writes`` (write SQL and merges),
``workspaces`` (workspace rows), ``lookups`` (passage text, the side connection), ``query_read``
(the read of one query) and ``store`` (``PostgresChunkStore``, the thin public face).

Modules:

- ``citus``: Citus: every table distributed by ``tenant_id``, co-located, so a workspace lives on …
- ``corrections``: The PostgreSQL store's entity corrections: merges, kinds and hidden entities
- ``embedded``: The embedded PostgreSQL: a real server on a data directory inside the project folder
- ``embedded_store``: The PostgreSQL store on the embedded server: the adapter with the server's …
- ``giving``: Connections whose long work gives way as soon as an answer is in
- ``judging``: The PostgreSQL store's judging half: query sets, judgments and saved runs
- ``kept_postings``: Common terms' live postings kept with the image of one generation: a query …
- ``listings``: What a workspace holds, listed or counted: its sources, its entities, its summary
- ``passage_copy``: A batch's passage rows as one binary COPY built in numpy, a field at a time, …
- ``pieces``: A write's Python work in pieces of ``PIECE_ROWS`` rows, each ended by a checkpoint
- ``repairs``: ``python -m core db repair``: each workspace's counters checked against its …
- ``server_settings``: The embedded PostgreSQL's settings for the machine it runs on
- ``snapshots``: A read's snapshot kept for the passages looked up after the read returned
- ``staging``: A big batch's tokenising and block building in a worker process beside the writer
"""

from core.stores.postgres.blocks import MAX_SEGMENTS, MERGE_FACTOR
from core.stores.postgres.query_read import PREFETCH_ROWS
from core.stores.postgres.resilience import (
    ACQUIRE_TIMEOUT_S,
    CALL_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    DEFAULT_RETRIES,
    STATEMENT_TIMEOUT_S,
)
from core.stores.postgres.store import PostgresChunkStore

__all__ = [
    "ACQUIRE_TIMEOUT_S",
    "CALL_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "DEFAULT_RETRIES",
    "MAX_SEGMENTS",
    "MERGE_FACTOR",
    "PREFETCH_ROWS",
    "STATEMENT_TIMEOUT_S",
    "PostgresChunkStore",
]
