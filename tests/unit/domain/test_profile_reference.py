"""The figures issue 12 promises, from an independent reference implementation.

Cranfield, whole documents (title + newline + text, the two empty records left out),
every matching document scored (no limit), k 10: nDCG@10 0.4098 with the plain
profile and 0.4311 with the english one. Written here from the formula and PyStemmer
alone, sharing nothing with core but the stopword list, so a regression in core's
tokenizer, formula or metrics cannot move the reference with it. The same figures
through a store and the Evaluate facade are pinned in tests/unit/service/test_service_profiles.py.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import Stemmer

from core.domain.tokenize import STOPWORDS

DATA = Path(__file__).resolve().parents[3] / "data" / "cranfield"
#: The issue's figures, to four places.
EXPECTED = {"plain": 0.4098, "english": 0.4311}


def reference_tokens(text: str, stem: bool) -> list[str]:
    normalised = unicodedata.normalize("NFKC", text).casefold()
    terms = [t for t in re.findall(r"[^\W_]+", normalised) if t not in STOPWORDS]
    return Stemmer.Stemmer("english").stemWords(terms) if stem else terms


def reference_ndcg_at_10(stem: bool) -> float:
    docs: dict[str, list[str]] = {}
    for line in (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        title, body = record.get("title") or "", record.get("text") or ""
        text = f"{title}\n{body}" if title.strip() else body
        if text.strip():
            docs[record["_id"]] = reference_tokens(text, stem)
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    postings: dict[str, dict[str, int]] = defaultdict(dict)
    for doc, tokens in docs.items():
        for term, tf in Counter(tokens).items():
            postings[term][doc] = tf
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (DATA / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, grade = line.split()
        qrels[query_id][doc_id] = int(grade)
    total, count = 0.0, 0
    for line in (DATA / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        query = json.loads(line)
        if query["_id"] not in qrels:
            continue
        scores: dict[str, float] = defaultdict(float)
        for term in sorted(set(reference_tokens(query["text"], stem))):
            df = len(postings.get(term, {}))
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for doc, tf in postings.get(term, {}).items():
                norm = 1.2 * (1 - 0.75 + 0.75 * len(docs[doc]) / avgdl)
                scores[doc] += idf * tf * 2.2 / (tf + norm)
        top = sorted(scores, key=lambda d: (-scores[d], d))[:10]
        judged = qrels[query["_id"]]
        dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top))
        ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        total += dcg / idcg if idcg else 0.0
        count += 1
    assert count == 225 and n == 1398
    return total / count


@pytest.mark.parametrize("profile", ["plain", "english"])
def test_the_reference_gives_the_issues_cranfield_figures(profile: str) -> None:
    assert round(reference_ndcg_at_10(stem=profile == "english"), 4) == EXPECTED[profile]
