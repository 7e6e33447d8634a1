"""The synchronous facade the screens call: one method per user action.

A package by screen family, so a new screen adds a module instead of growing one:

| module | what |
| --- | --- |
| ``runner`` | the one background event loop and store every family shares |
| ``common`` | the query view, the empty-result rule, entity names |
| ``search`` | Search: ranked passages and their explanations |
| ``analysis`` | Truncation, "why not?", Evaluate |
| ``library`` | Upload, sources, an entity's passages, workspaces |
| ``entities`` | Entities: counts by kind, the name search and the order |
| ``access`` | sign-in: a person's guarded view, owners and members |
| ``corpus`` | Corpus: counts, lengths, the term browser |
| ``rankings`` | Compare rankings, workspace tokenizer profiles |
| ``grading`` | a grade from a Search result, the ceiling of a limit in the Truncation sweep |
| ``facade`` | ``LexplainService`` (all families on one store) and opening the store |

The service composes core (tokenizer, store port, ``rank_chunks``, indexing) and
returns pydantic models the pages render; it never formats and never imports
streamlit, so it is tested without a browser (tests/unit/service/).
Everything a page or test imports is re-exported here: ``from core.service import X``.

Modules:

- ``bounds``: How much one query may ask for, refused in plain words before anything is read
- ``diagnosis``: After an evaluation: why each relevant passage was lost, and which k1 and b …
- ``judging``: Query sets and judgments of a workspace: what the Judge and Evaluate screens call
- ``parity``: Parity a user can check: a workspace's store against an in-memory copy of its passages
- ``run_ranking``: How an Evaluate run ranks one query: its spec, top documents, an expanded read
"""

from __future__ import annotations

from core.analysis.diagnosis import (
    CAUSE_NOTES,
    LostCause,
    LostPassage,
    QueryDiagnosis,
    RunDiagnosis,
)
from core.analysis.evaluation import EvaluationRun
from core.analysis.expansion import (
    FB_DOCS,
    FB_TERMS,
    MAX_FEEDBACK,
    ORIGINAL_WEIGHT,
    Expansion,
    ExpansionLedger,
    ExpansionSpec,
    expansion_rows,
)
from core.analysis.judgment_files import (
    JudgmentError,
    JudgmentFormat,
    QueryFormat,
    RefusedQuery,
    refused_heading,
)
from core.analysis.pooling import (
    MAX_POOL_DEPTH,
    POOL_DEPTH,
    POOL_RANKER_LABELS,
    POOL_RANKERS,
    JudgingPool,
    PoolRanker,
    PoolSpec,
    SetProgress,
)
from core.analysis.predictors import QueryDifficulty
from core.analysis.rankers import (
    KIND_LABELS,
    MAX_K1,
    RUN_KINDS,
    Ranker,
    RankerKind,
    RankMovement,
)
from core.analysis.residual import ResidualEvaluation, learned_from_judged
from core.analysis.tuning import DEFAULT_BS, DEFAULT_K1S, METRICS, GridSpec, TuningGrid, grid_values
from core.domain.bm25 import ScoreExplanation
from core.domain.chunks import ChunkingOptions
from core.domain.entities import ENTITY_KINDS, EXTRACTOR_LIMITS, EntityKind
from core.domain.filters import MetadataMatch, PassageFilter
from core.domain.judging import GRADE_NAMES, SavedRunSummary
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.service.access import (
    LinkedWorkspace,
    NotOwner,
    WorkspaceAccess,
    WorkspaceFrame,
    WorkspaceGuard,
    local_mode,
    signed_in_email,
)
from core.service.analysis import (
    PASSAGE_MARK,
    EvaluationComparison,
    JudgedCoverage,
    LimitedEntry,
    QueryComparison,
    TruncationView,
    UnlimitedEntry,
    compare_runs,
)
from core.service.bounds import (
    EVALUATE_BOUNDS_NOTE,
    MAX_CANDIDATE_CELLS,
    MAX_EVALUATE_QUERIES,
    MAX_K,
    MAX_QUERY_TERMS,
    QUERY_BOUNDS_NOTE,
    one_sentence,
)
from core.service.common import (
    DEFAULT_K,
    DEFAULT_LIMIT,
    DEFAULT_WORKSPACE,
    K_MAX,
    LIMIT_MAX,
    NOT_FOUND_OR_NO_ACCESS,
    SAMPLE_QRELS,
    SAMPLE_QUERIES,
    SAMPLE_QUERY_SET,
    UNLIMITED,
    EmptyReason,
    NoAccess,
    QueryView,
)
from core.service.corpus import TERM_BROWSER_LIMIT, CorpusView, TermInfo, TermPassage
from core.service.entities import (
    ENTITY_KIND_HEADINGS,
    ENTITY_ORDERS,
    EntityOrder,
    EntityOverview,
    ReextractionReport,
)
from core.service.facade import LexplainService, StoreUnreachable
from core.service.grading import SEARCH_SET, CeilingJudgments, LimitCeiling
from core.service.judging import DEFAULT_POOL, QueryHardness, SavedQuerySet
from core.service.library import (
    EXAMPLE_WITH_NAMES,
    EXAMPLE_WORKSPACE,
    SAMPLE_CORPUS,
    SAMPLE_LABEL,
    SAMPLE_QUERY,
    UPLOAD_FILE_TYPES,
    EntityPassage,
    FileReport,
    Mention,
)
from core.service.parity import PARITY_QUERIES, ParityReport
from core.service.rankings import CompareView
from core.service.run_ranking import NO_LIMIT, RunSpec
from core.service.runner import ProgressCallback
from core.service.search import PassageView, RankedPassage, SearchResult

__all__ = [
    "CAUSE_NOTES",
    "DEFAULT_BS",
    "DEFAULT_K",
    "DEFAULT_K1S",
    "DEFAULT_LIMIT",
    "DEFAULT_POOL",
    "DEFAULT_PROFILE",
    "DEFAULT_WORKSPACE",
    "ENTITY_KINDS",
    "ENTITY_KIND_HEADINGS",
    "ENTITY_ORDERS",
    "EVALUATE_BOUNDS_NOTE",
    "EXAMPLE_WITH_NAMES",
    "EXAMPLE_WORKSPACE",
    "EXTRACTOR_LIMITS",
    "FB_DOCS",
    "FB_TERMS",
    "GRADE_NAMES",
    "KIND_LABELS",
    "K_MAX",
    "LIMIT_MAX",
    "MAX_CANDIDATE_CELLS",
    "MAX_EVALUATE_QUERIES",
    "MAX_FEEDBACK",
    "MAX_K",
    "MAX_K1",
    "MAX_POOL_DEPTH",
    "MAX_QUERY_TERMS",
    "METRICS",
    "NOT_FOUND_OR_NO_ACCESS",
    "NO_LIMIT",
    "ORIGINAL_WEIGHT",
    "PARITY_QUERIES",
    "PASSAGE_MARK",
    "POOL_DEPTH",
    "POOL_RANKERS",
    "POOL_RANKER_LABELS",
    "QUERY_BOUNDS_NOTE",
    "RUN_KINDS",
    "SAMPLE_CORPUS",
    "SAMPLE_LABEL",
    "SAMPLE_QRELS",
    "SAMPLE_QUERIES",
    "SAMPLE_QUERY",
    "SAMPLE_QUERY_SET",
    "SEARCH_SET",
    "TERM_BROWSER_LIMIT",
    "UNLIMITED",
    "UPLOAD_FILE_TYPES",
    "CeilingJudgments",
    "ChunkingOptions",
    "CompareView",
    "CorpusView",
    "EmptyReason",
    "EntityKind",
    "EntityOrder",
    "EntityOverview",
    "EntityPassage",
    "EvaluationComparison",
    "EvaluationRun",
    "Expansion",
    "ExpansionLedger",
    "ExpansionSpec",
    "FileReport",
    "GridSpec",
    "JudgedCoverage",
    "JudgingPool",
    "JudgmentError",
    "JudgmentFormat",
    "LexplainService",
    "LimitCeiling",
    "LimitedEntry",
    "LinkedWorkspace",
    "LostCause",
    "LostPassage",
    "Mention",
    "MetadataMatch",
    "NoAccess",
    "NotOwner",
    "ParityReport",
    "PassageFilter",
    "PassageView",
    "PoolRanker",
    "PoolSpec",
    "Profile",
    "ProgressCallback",
    "QueryComparison",
    "QueryDiagnosis",
    "QueryDifficulty",
    "QueryFormat",
    "QueryHardness",
    "QueryView",
    "RankMovement",
    "RankedPassage",
    "Ranker",
    "RankerKind",
    "ReextractionReport",
    "RefusedQuery",
    "ResidualEvaluation",
    "RunDiagnosis",
    "RunSpec",
    "SavedQuerySet",
    "SavedRunSummary",
    "ScoreExplanation",
    "SearchResult",
    "SetProgress",
    "StoreUnreachable",
    "TermInfo",
    "TermPassage",
    "TruncationView",
    "TuningGrid",
    "UnlimitedEntry",
    "WorkspaceAccess",
    "WorkspaceFrame",
    "WorkspaceGuard",
    "compare_runs",
    "expansion_rows",
    "grid_values",
    "learned_from_judged",
    "local_mode",
    "one_sentence",
    "refused_heading",
    "signed_in_email",
]
