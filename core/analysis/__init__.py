"""The analyses on top of ranking: what-if rankers, truncation, evaluation, diagnosis, tuning.

Pure like the domain (they take candidate columns and grades, never a store), but about runs and
judgments rather than one score; the service reads what they need and hands them here.

Modules:

- ``diagnosis``: Why each relevant passage was lost: one cause per passage, from the run's own …
- ``explanation_html``: A result's "why this score" and "show all" as HTML ``<details>`` inside …
- ``expansion``: Query expansion by pseudo-relevance feedback (RM3), each weight with its source
- ``evaluation``: Judged evaluation: read queries and relevance judgments, score a run per query
- ``judgment_files``: Query sets and judgments in and out, in the formats analysts already exchange
- ``pooling``: What a rater grades next: the pool of a query, and how far they are through a set
- ``predictors``: Query performance predictors: how likely a query is to rank badly, before …
- ``presentation``: Formatting for the screens: escaped highlighting, formula strings, comparisons
- ``residual``: Residual ranking: feedback from the grades, measured without the passages it …
- ``rankers``: What-if rankers: the same candidate read ranked under other BM25 settings
- ``sentences``: An analyst's words: the sentences, counts and number formats the screens share
- ``run_comparison``: Two to five saved runs compared: means with intervals, wins, significance, …
- ``truncation``: What the candidate ``limit`` costs: the limited ranking against the unlimited one
- ``tuning``: k1 and b tuned on the analyst's own judgments: a grid, its best point, and whether …
"""
