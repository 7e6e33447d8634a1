"""Entities: named things a passage mentions, with ids stable across documents.

``EntityId`` is a UUIDv5 of the kind and the normalised name, so "Rolls-Royce
Ltd" found in two uploads is one entity without any lookup table; a random id
would need a name registry in every store and a race to fill it.
"""

from __future__ import annotations

import bisect
import csv
import io
import re
import unicodedata
import uuid
from collections.abc import Sequence
from typing import Literal, NamedTuple, Protocol
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: What an entity can be; "other" covers acronyms and names of unknown kind.
EntityKind = Literal["person", "organisation", "place", "other"]
#: The namespace of every EntityId (a fixed, random UUID; never change it).
ENTITY_NAMESPACE: UUID = UUID("6f1d3c52-9a0e-4b8e-bb0b-2f5c1e7d4a91")
#: Runs of whitespace collapse to one space in a normalised name.
_SPACES = re.compile(r"\s+")

EntityId = UUID


def normalise_name(name: str) -> str:
    """NFKC, casefolded, whitespace collapsed: the form two mentions must share."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()


def entity_id(kind: EntityKind, name: str) -> EntityId:
    """The deterministic id of the entity ``name`` of ``kind``."""
    return uuid.uuid5(ENTITY_NAMESPACE, f"{kind}\x1f{normalise_name(name)}")


class Entity(BaseModel):
    """A named thing; ``id`` derives from kind and name when not given."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    kind: EntityKind = "other"
    id: UUID | None = None

    @model_validator(mode="after")
    def _derive_id(self) -> Entity:
        derived = entity_id(self.kind, self.name)
        if self.id is not None and self.id != derived:
            raise ValueError(f"entity id {self.id} disagrees with kind and name ({derived})")
        object.__setattr__(self, "id", derived)
        return self

    @property
    def entity_id(self) -> EntityId:
        assert self.id is not None
        return self.id


# --- The mention extractor -------------------------------------------------------------------
#
# Rules over capitalisation, not a statistical model: it runs offline, instantly, and the same
# way forever, and every mention can be explained by the rule that found it. The cost is stated
# in ``EXTRACTOR_LIMITS`` and shown to the analyst; a spaCy/transformer NER would find more but
# needs a model download, is slower at ingest, and its errors cannot be explained.

#: What the rule-based extractor cannot do; the Entities screen shows this text verbatim.
EXTRACTOR_LIMITS = (
    "Entities are found by rules, not by a language model: runs of capitalised words "
    '("Langley Research Center"), acronyms (NASA), company suffixes (Inc, Ltd, GmbH, plc ...), '
    "person titles (Mr, Dr, Prof ...), and the names and aliases of an uploaded entity list. "
    "So it misses names written in lower case (as in the Cranfield abstracts) or starting with a "
    "small letter (iPhone), a one-word name that only ever starts a sentence, and names in "
    "all-capital text (three or more words in capitals are taken for a heading). It cannot tell "
    'a place from an organisation unless a suffix, a title or a word like "in" or '
    '"University" says which, so many names are of kind "other"; and it takes capitalised '
    "headings and some nationality words for names. Spelling variants are different entities "
    "unless an entity list maps them to one."
)

#: Titles that announce a person; the title itself is not part of the name.
PERSON_TITLES: frozenset[str] = frozenset(
    {
        "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "sir", "dame", "lady",
        "lord", "rev", "president", "chancellor", "senator", "governor", "mayor", "judge",
        "king", "queen", "prince", "princess", "captain", "colonel", "general", "sgt",
        "lt", "st",
    }
)  # fmt: skip
#: Legal-form suffixes that end an organisation's name (matched in any case: "plc").
ORGANISATION_SUFFIXES: frozenset[str] = frozenset(
    {
        "inc", "incorporated", "corp", "corporation", "ltd", "limited", "llc", "llp", "plc",
        "gmbh", "ag", "sa", "nv", "bv", "co", "company", "kg", "oy", "ab", "spa", "srl",
        "pty", "holdings", "group",
    }
)  # fmt: skip
#: Head words that make a capitalised name an organisation.
ORGANISATION_WORDS: frozenset[str] = frozenset(
    {
        "university", "institute", "institution", "college", "school", "academy", "society",
        "association", "agency", "organization", "organisation", "foundation", "council",
        "commission", "committee", "ministry", "department", "police", "laboratory",
        "laboratories", "center", "centre", "bank", "airways", "airlines", "administration",
        "federation", "union", "party", "board", "authority", "service", "office",
        "establishment", "museum", "trust", "industries", "technologies", "systems",
    }
)  # fmt: skip
#: Head words that make a capitalised name a place.
PLACE_WORDS: frozenset[str] = frozenset(
    {
        "state", "city", "county", "province", "river", "lake", "mount", "mountains",
        "island", "islands", "valley", "bay", "sea", "ocean", "base", "street", "road",
        "airport", "gulf", "cape", "desert", "region", "republic", "kingdom", "coast",
    }
)  # fmt: skip
#: Lower-case words a place name follows ("in Paris", "near Nagoya").
PLACE_CUES: frozenset[str] = frozenset({"in", "near", "outside", "across", "throughout"})
#: Capitalised words never taken as a name on their own (function words, months, days).
NOT_NAMES: frozenset[str] = frozenset(
    {
        "i", "a", "an", "the", "this", "that", "these", "those", "it", "he", "she", "we",
        "they", "you", "his", "her", "our", "their", "my", "in", "on", "at", "for", "of",
        "and", "but", "or", "if", "when", "while", "after", "before", "however", "although",
        "as", "by", "to", "from", "with", "there", "here", "what", "which", "who", "how",
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december", "monday", "tuesday", "wednesday",
        "thursday", "friday", "saturday", "sunday",
    }
)  # fmt: skip
#: Lower-case words that may sit inside a name between capitalised words.
_PARTICLES: frozenset[str] = frozenset(
    {"van", "von", "de", "der", "den", "du", "da", "di", "la", "le"}
)
#: Joining words allowed inside a name only after an organisation or place head word.
_HEAD_CONNECTORS: frozenset[str] = frozenset({"of", "for", "&"})
#: Words after which "of", "for" or "&" may continue a name ("University of Cambridge").
_HEAD_WORDS: frozenset[str] = ORGANISATION_WORDS | PLACE_WORDS
#: A word: letters and digits, joined by apostrophes, hyphens or ampersands (Rolls-Royce, AT&T).
_WORD = re.compile(r"[^\W_]+(?:['’\-&][^\W_]+)*")
#: Demonym endings: a lone capitalised word ending so ("Ukrainian", "Chinese") is an adjective.
_DEMONYM = re.compile(r"(?:ian|ese|ish|ean)$")
#: Separators for aliases in an entity list.
_ALIAS_SPLIT = re.compile(r"[;|]")
#: Kind spellings accepted in an entity list.
_KIND_SPELLINGS: dict[str, EntityKind] = {
    "person": "person",
    "people": "person",
    "organisation": "organisation",
    "organization": "organisation",
    "org": "organisation",
    "place": "place",
    "location": "place",
    "other": "other",
    "": "other",
}


class Mention(BaseModel):
    """A span of text that names an entity: ``text == source[start:end]``."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str = Field(min_length=1)
    entity: Entity


class EntityExtractor(Protocol):
    """Finds the entity mentions in a text; mentions are sorted and never overlap."""

    def extract(self, text: str) -> list[Mention]: ...


class ListedEntity(BaseModel):
    """One row of a user-supplied entity list: a name, its kind, its other spellings."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    kind: EntityKind = "other"
    aliases: tuple[str, ...] = ()


class EntityListError(ValueError):
    """An entity list that cannot be used; the message names the line and the problem."""


def load_entity_list(text: str) -> list[ListedEntity]:
    """Parse CSV rows ``name,kind,aliases`` (aliases separated by ';' or '|').

    A first row reading ``name,kind,aliases`` is a header. Blank lines are skipped; a row
    without a name or with an unknown kind is an error naming its line.
    """
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    entries: list[ListedEntity] = []
    problems: list[str] = []
    for line, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row]
        if not any(cells):
            continue
        if line == 1 and cells[0].casefold() == "name":
            continue
        name = cells[0]
        kind_text = cells[1].casefold() if len(cells) > 1 else ""
        kind = _KIND_SPELLINGS.get(kind_text)
        if not name:
            problems.append(f"line {line}: no name")
            continue
        if kind is None:
            problems.append(
                f"line {line}: unknown kind {cells[1]!r} (use person, organisation, place, other)"
            )
            continue
        aliases = tuple(
            alias.strip()
            for cell in cells[2:]
            for alias in _ALIAS_SPLIT.split(cell)
            if alias.strip() and alias.strip().casefold() != name.casefold()
        )
        entries.append(ListedEntity(name=name, kind=kind, aliases=aliases))
    if problems:
        raise EntityListError("entity list: " + "; ".join(problems))
    return entries


class _Token(NamedTuple):
    start: int
    end: int
    text: str


def _is_capitalised(word: str) -> bool:
    return word[0].isupper()


def _is_acronym(word: str) -> bool:
    if not word[0].isupper():
        return False
    letters = [c for c in word if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _mention(start: int, end: int, text: str, entity: Entity) -> Mention:
    # The values are valid by construction; validating would re-derive the entity id per mention.
    return Mention.model_construct(start=start, end=end, text=text, entity=entity)


def _folded(word: str) -> str:
    return word.casefold()


def _kind_of(words: list[str], before: _Token | None, head: _Token) -> EntityKind:
    """The kind a run of words earns from its own words and the word before it."""
    if words[-1] in ORGANISATION_SUFFIXES or words[-1] in ORGANISATION_WORDS:
        return "organisation"
    if len(words) > 1 and words[0] in ORGANISATION_WORDS:
        return "organisation"
    if words[-1] in PLACE_WORDS or (len(words) > 1 and words[0] in PLACE_WORDS):
        return "place"
    cue = before is not None and before.text.islower() and before.text in PLACE_CUES
    if cue and not _is_acronym(head.text):
        return "place"
    return "other"


class RuleBasedExtractor:
    """The default extractor; see ``EXTRACTOR_LIMITS`` for what it cannot do.

    Rules, in order: names and aliases from the entity list (case-insensitive, whole words,
    longest first); a person title followed by capitalised words (person); runs of capitalised
    words and acronyms, with particles (van, de) and, after a head word, "of"/"for"/"&"; a legal
    suffix (Inc, plc ...) or an organisation word makes it an organisation, a place word or a
    preceding "in"/"near" a place. A lone capitalised word that starts a sentence is not a name
    unless the same text uses it as a name elsewhere. Within one text, a name keeps the most
    specific kind any of its mentions earned, and a lone surname after a person's full name is
    that person.
    """

    def __init__(self, listed: Sequence[ListedEntity] = ()) -> None:
        self._listed: dict[str, Entity] = {}
        patterns: list[str] = []
        for entry in listed:
            entity = Entity(name=entry.name, kind=entry.kind)
            for spelling in (entry.name, *entry.aliases):
                key = normalise_name(spelling)
                if key and key not in self._listed:
                    self._listed[key] = entity
                    patterns.append(spelling)
        patterns.sort(key=len, reverse=True)
        self._list_pattern: re.Pattern[str] | None = None
        if patterns:
            alternatives = "|".join(
                r"\s+".join(re.escape(part) for part in spelling.split()) for spelling in patterns
            )
            self._list_pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)

    def extract(self, text: str) -> list[Mention]:
        if self._list_pattern is None and text.islower():
            return []  # no list to look up and no capital to start a name (see below)
        taken: list[Mention] = self._listed_mentions(text)
        covered = sorted((m.start, m.end) for m in taken)
        if text.islower():
            # No cased character is upper case, so no word can start a name (every rule
            # needs a capitalised word or an acronym): skip cutting the text into tokens,
            # which costs as much as the rest of loading a lower-case passage.
            return sorted(taken, key=lambda m: (m.start, m.end))
        tokens = [_Token(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
        found = self._rule_mentions(text, tokens, covered)
        return sorted(taken + found, key=lambda m: (m.start, m.end))

    def _listed_mentions(self, text: str) -> list[Mention]:
        if self._list_pattern is None:
            return []
        mentions = []
        for match in self._list_pattern.finditer(text):
            entity = self._listed.get(normalise_name(match.group()))
            if entity is not None:
                mentions.append(_mention(match.start(), match.end(), match.group(), entity))
        return mentions

    def _rule_mentions(
        self, text: str, tokens: list[_Token], covered: list[tuple[int, int]]
    ) -> list[Mention]:
        covered_starts = [start for start, _ in covered]

        def free(token: _Token) -> bool:
            # Listed mentions never overlap each other, so only the one starting last before
            # the token's end can overlap it.
            index = bisect.bisect_left(covered_starts, token.end) - 1
            return index < 0 or covered[index][1] <= token.start

        def gap(left: _Token, right: _Token) -> str:
            return text[left.end : right.start]

        def sentence_initial(index: int) -> bool:
            if index == 0:
                return not text[: tokens[0].start].strip(" \t\"'“‘([")
            before = text[tokens[index - 1].end : tokens[index].start]
            if "\n" in before:
                return True
            stripped = before.strip(" \t\"'“‘([")
            if not stripped or stripped[-1] not in ".!?:":
                return False
            previous = _folded(tokens[index - 1].text)
            # "Dr. Chen", "Acme Inc. The": an abbreviation's full stop does not end a sentence.
            return previous not in PERSON_TITLES and previous not in ORGANISATION_SUFFIXES

        def nameish(token: _Token) -> bool:
            # An acronym is capitalised too (its first letter is upper case).
            return _is_capitalised(token.text)

        # Candidate runs: (first token, last token (inclusive), kind evidence).
        runs: list[tuple[int, int, EntityKind]] = []
        i = 0
        n = len(tokens)
        while i < n:
            token = tokens[i]
            if not nameish(token) or not free(token):
                i += 1
                continue
            word = _folded(token.text)
            # A person title: the capitalised words after it are a person's name.
            if word in PERSON_TITLES and i + 1 < n:
                gap_text = gap(token, tokens[i + 1]).strip()
                if gap_text in ("", ".") and _is_capitalised(tokens[i + 1].text):
                    j = i + 1
                    while (
                        j + 1 < n
                        and free(tokens[j + 1])
                        and not gap(tokens[j], tokens[j + 1]).strip()
                        and "\n" not in gap(tokens[j], tokens[j + 1])
                        and (
                            _is_capitalised(tokens[j + 1].text)
                            or (
                                _folded(tokens[j + 1].text) in _PARTICLES
                                and j + 2 < n
                                and _is_capitalised(tokens[j + 2].text)
                            )
                        )
                        and _folded(tokens[j + 1].text) not in PERSON_TITLES
                        and j - i < 4
                    ):
                        j += 1
                    if _folded(tokens[j].text) not in ORGANISATION_SUFFIXES:
                        runs.append((i + 1, j, "person"))
                        i = j + 1
                        continue
            # A run of capitalised words and acronyms.
            j = i
            while j + 1 < n and free(tokens[j + 1]):
                between = gap(tokens[j], tokens[j + 1])
                nxt = tokens[j + 1]
                nxt_word = _folded(nxt.text)
                if between.strip() == "," and nxt_word in ORGANISATION_SUFFIXES:
                    j += 1  # "Acme, Inc."
                    break
                if between.strip() or "\n" in between:
                    break
                if nameish(nxt) and nxt_word not in PERSON_TITLES:
                    j += 1
                elif nxt_word in ORGANISATION_SUFFIXES:
                    j += 1  # "Rolls-Royce plc"
                    break
                elif (
                    nxt.text.isdigit()
                    and len(nxt.text) <= 4
                    and j == i
                    and _is_acronym(tokens[j].text)
                ):
                    j += 1  # "IBM 704"
                elif (
                    nxt_word in _PARTICLES | _HEAD_CONNECTORS
                    and j + 2 < n
                    and not gap(nxt, tokens[j + 2]).strip()
                ):
                    after = j + 2
                    if _folded(tokens[after].text) == "the" and after + 1 < n:
                        after += 1
                    if not (_is_capitalised(tokens[after].text) and free(tokens[after])):
                        break
                    head_word = _folded(tokens[j].text)
                    if nxt_word in _HEAD_CONNECTORS and head_word not in _HEAD_WORDS:
                        break
                    j = after
                else:
                    break
            first = i
            # Leading function words ("The European Space Agency") are not part of the name.
            while first < j and _folded(tokens[first].text) in NOT_NAMES:
                first += 1
            runs.append((first, j, "other"))
            i = j + 1

        # Decide, classify and resolve.
        single_names_mid_sentence = {
            _folded(tokens[a].text)
            for a, b, _ in runs
            if a == b and not sentence_initial(a) and _folded(tokens[a].text) not in NOT_NAMES
        }
        # A person's surname alone may start a sentence ("Tanaka agreed.").
        single_names_mid_sentence.update(
            _folded(tokens[b].text) for a, b, kind in runs if kind == "person" and b > a
        )
        raw: list[tuple[int, int, str, EntityKind]] = []
        for first, last, evidence in runs:
            head = tokens[first]
            words = [_folded(t.text) for t in tokens[first : last + 1]]
            if last - first >= 2 and all(_is_acronym(t.text) for t in tokens[first : last + 1]):
                continue  # three or more words in capitals: a heading or shouting, not a name
            if first == last:
                word = words[0]
                if word in NOT_NAMES or word in ORGANISATION_SUFFIXES or len(word) == 1:
                    continue
                if evidence != "person" and not _is_acronym(head.text):
                    if sentence_initial(first) and word not in single_names_mid_sentence:
                        continue
                    follower = tokens[first + 1] if first + 1 < n else None
                    if (
                        _DEMONYM.search(word)
                        and follower is not None
                        and follower.text[0].islower()
                        and not gap(head, follower).strip()
                    ):
                        continue
            start, end = head.start, tokens[last].end
            if text.startswith(".", end) and words[-1] in ORGANISATION_SUFFIXES | PERSON_TITLES:
                end += 1  # "Boeing Co."
            for possessive in ("'s", "’s"):
                if text.endswith(possessive, start, end):
                    end -= 2
            before = tokens[first - 1] if first > 0 else None
            kind = evidence if evidence != "other" else _kind_of(words, before, head)
            raw.append((start, end, text[start:end], kind))
        return self._resolve(raw)

    @staticmethod
    def _resolve(raw: list[tuple[int, int, str, EntityKind]]) -> list[Mention]:
        rank: dict[EntityKind, int] = {"other": 0, "place": 1, "organisation": 2, "person": 3}
        best: dict[str, EntityKind] = {}
        names: dict[str, str] = {}
        for _start, _end, surface, kind in raw:
            name = surface.rstrip(".").strip()
            key = normalise_name(name)
            names.setdefault(key, name)
            if key not in best or rank[kind] > rank[best[key]]:
                best[key] = kind
        surnames = {
            key.split(" ")[-1]: key for key, kind in best.items() if kind == "person" and " " in key
        }
        mentions = []
        made: dict[str, Entity] = {}
        for start, end, surface, _kind in raw:
            key = normalise_name(surface.rstrip(".").strip())
            if " " not in key and key in surnames and best[key] != "organisation":
                key = surnames[key]
            entity = made.get(key)
            if entity is None:
                entity = made[key] = Entity(name=names[key], kind=best[key])
            mentions.append(_mention(start, end, surface, entity))
        return mentions


def entity_list_extractor(csv_text: str) -> RuleBasedExtractor:
    """A ``RuleBasedExtractor`` that also finds the names and aliases of a CSV entity list."""
    return RuleBasedExtractor(load_entity_list(csv_text))
