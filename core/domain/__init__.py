"""The domain: what lexplain computes, with no store, no screen and no I/O.

Everything here is pure and deterministic, so both stores and every screen get the same numbers
from one definition (one tokenizer, one formula, one truncation kernel).
``tests/test_layering.py`` holds that nothing here imports a store, the service or asyncpg.

Modules:

- ``agreement``: Several raters: how far they agree, and the one grade their grades become
- ``bm25``: The BM25 formula, corpus statistics and the per-term explanation
- ``chunks``: Passages: the content-addressed ``StoredChunk`` and the documents they come from
- ``classic``: The textbook BM25 (Robertson/Sparck Jones IDF), for teaching and comparison
- ``columns``: ``LexicalCandidates`` from the kernel's own columns, without validating them again
- ``comparison``: Comparing runs: significance, confidence intervals, win/tie/loss, list overlap
- ``entities``: Entities: named things a passage mentions, with ids stable across documents
- ``filters``: Which passages may be candidates: a search narrowed to sources, entities and …
- ``judging``: What judging keeps per workspace: query sets, judgments and saved evaluation runs
- ``metrics``: Ranking quality: P@k, recall@k, MRR, average precision (MAP), nDCG@k, Judged@k
- ``models``: ``built`` and ``builder``: pydantic models from values computed here, not …
- ``names``: When two workspace names are one name: what a person sees, not the code points
- ``places``: Where a passage past a read's limit stands in its truncation order, from its postings
- ``postings``: The columnar query kernel: CSR postings of the query terms -> ``LexicalCandidates``
- ``query_cost``: What one query may cost: one rule for every path a query takes, so no path …
- ``ranking``: Candidates to ranked passages: pure, deterministic, store-agnostic
- ``steps``: Synchronous work cut into steps: a generator that yields (nothing) between them
- ``tokenize``: What a term is: the one tokenizer every store and every screen shares, per profile
- ``unlimited``: A read that nothing cut, ranked straight from its postings: its columns built …
"""
