"""Corpus: the statistics behind every score, and a term browser.

Counts and every passage length come from the store's listings; a term's idf is
computed by ``core.domain.bm25`` from the same whole-corpus statistics the ranker uses,
never re-derived here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from core.domain.bm25 import CorpusStats, inverse_document_frequency
from core.domain.chunks import StoredChunk
from core.domain.tokenize import raw_terms
from core.service.common import UNLIMITED
from core.service.runner import StoreRunner
from core.stores.port import CorpusSummary, tenant_of

#: Most terms the corpus term browser lists for one prefix.
TERM_BROWSER_LIMIT = 200


class CorpusView(BaseModel):
    """Counts over a workspace and every passage length (for the histogram)."""

    model_config = ConfigDict(frozen=True)

    summary: CorpusSummary
    doc_lengths: list[int]


class TermInfo(BaseModel):
    """A term of the corpus with its df and Lucene idf."""

    model_config = ConfigDict(frozen=True)

    term: str
    df: int
    idf: float


class TermPassage(BaseModel):
    """A passage containing a term, with the term's tf and the passage length."""

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    tf: int
    doc_length: int


class CorpusActions(StoreRunner):
    """The Corpus screen's actions."""

    def corpus(self, *, workspace: str) -> CorpusView:
        """Counts and every passage length of the workspace."""
        return self._call(self._corpus(workspace))

    async def _corpus(self, workspace: str) -> CorpusView:
        tenant = await tenant_of(self._store, workspace)
        summary = await self._store.corpus_summary(tenant)
        lengths = await self._store.doc_lengths(tenant)
        return CorpusView(summary=summary, doc_lengths=lengths)

    def terms_with_prefix(
        self, prefix: str, *, workspace: str, limit: int = TERM_BROWSER_LIMIT
    ) -> list[TermInfo]:
        """Terms starting with ``prefix`` (normalised like the tokenizer), with df and idf."""
        return self._call(self._terms_with_prefix(prefix, workspace, limit))

    def top_terms(self, *, workspace: str, limit: int = TERM_BROWSER_LIMIT) -> list[TermInfo]:
        """The workspace's terms by df descending (then term): what the browser shows first.

        Every term starts with the empty prefix, so this is the prefix read with none; the
        stores order a prefix's terms by df already.
        """
        return self._call(self._terms(workspace, "", limit))

    async def _terms_with_prefix(self, prefix: str, workspace: str, limit: int) -> list[TermInfo]:
        normalised = "".join(raw_terms(prefix))
        if not normalised:
            return []
        return await self._terms(workspace, normalised, limit)

    async def _terms(self, workspace: str, normalised: str, limit: int) -> list[TermInfo]:
        tenant = await tenant_of(self._store, workspace)
        summary = await self._store.corpus_summary(tenant)
        found = await self._store.terms_with_prefix(normalised, tenant, limit)
        return [
            TermInfo(
                term=t.term,
                df=t.df,
                idf=inverse_document_frequency(
                    t.term,
                    CorpusStats(
                        n_docs=summary.passages,
                        avg_doc_length=summary.avg_doc_length,
                        doc_frequencies={t.term: t.df},
                    ),
                ),
            )
            for t in found
        ]

    def term_passages(
        self, term: str, *, workspace: str, limit: int = UNLIMITED
    ) -> list[TermPassage]:
        """The passages containing ``term``, by tf descending, then source and position."""
        found = self._call(self._store.lexical_candidates([term], self._tenant(workspace), limit))
        rows = [
            TermPassage(chunk=c.chunk, tf=c.term_frequencies.get(term, 0), doc_length=c.doc_length)
            for c in found.candidates
        ]
        rows.sort(key=lambda r: (-r.tf, r.chunk.source_id, r.chunk.chunk_index, r.chunk.id))
        return rows
