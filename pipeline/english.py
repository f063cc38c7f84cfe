"""Small, deterministic English heuristics for the offline backends (no tagger, no models).

NLTK's part-of-speech tagger needs downloadable data we cannot fetch, so verbs and subjects are
recognised with word lists and spelling cues. The heuristics are deliberately conservative:
when they are unsure they return ``None`` and the caller leaves the text unchanged, because an
annotator fixes a missing split faster than a wrong one.
"""

from __future__ import annotations

import re

AUXILIARIES = frozenset(
    "is are was were be been being am has have had do does did can could will would shall should may might must".split()
)

# Frequent lexical verbs in the forms that follow a subject (3rd person / past).
COMMON_VERBS = frozenset(
    """
    allow allows allowed became become becomes began begins belong belongs brought caused
    causes comprise comprises consist consists consisted contain contains contained created
    creates defeated developed develops died dies earned earns focuses focused founded gave
    gives grew grows held helps helped holds include includes included introduced involves
    leads led left lies lived lives located made make makes maintained maintains marked marks
    means meant moved occurred occurs offers offered plays played produced produces provide
    provides provided reached reaches received receives refers referred remains remained
    replaced replaces requires required sank serves served shows showed stands stood
    suggests suggested supports supported takes took uses used won works worked wrote writes
    """.split()
)

# Words that typically follow a verb ("served on", "maintained its", "flows into"), which lets
# a lower-case "-ed"/"-s" word be read as a verb rather than an adjective or a plural noun
# ("baked goods", "the results show").
_VERB_FOLLOWERS = frozenset(
    "a an the his her its their this that these those on in at from to by as with for over "
    "into under between until during about after before".split()
)

PREPOSITIONS = frozenset(
    "in on at after before during since by according for with from to of as although while "
    "when if because despite".split()
)

# Sentence-opening words of an introductory phrase that ends at a comma
# ("In 1980, ...", "However, ...", "According to X, ...").
_INTRO_WORDS = PREPOSITIONS | frozenset(
    "however therefore thus additionally moreover furthermore overall today currently also "
    "generally similarly unfortunately finally meanwhile then now originally historically "
    "specifically ultimately instead consequently still yet".split()
)

_SUBJECT_PRONOUNS = frozenset("i you he she it we they".split())
_DETERMINERS = frozenset("the a an this that these those his her its their our my your some".split())
_RELATIVES = frozenset("which who whom whose that where when what".split())
_PRONOUN_CONTRACTIONS = re.compile(r"^(?:it|he|she|they|we|you|there|that)['’](?:s|re|ve|ll|d)$", re.I)
_ADVERB = re.compile(r"^(?:[a-z]+ly|also|still|then|now|later|once|never|not|often|always)$")
_NAME_CONNECTORS = frozenset("of de da del van von bin al la le du".split())
_INTRO_PHRASE = re.compile(r"^\s*([A-Za-z]+)\b[^,]{0,60},\s+")
_TOKEN_EDGE_PUNCTUATION = ",;:.!?\"'“”‘’()[]"


def bare(token: str) -> str:
    """Lower-case token without surrounding punctuation."""
    return token.strip(_TOKEN_EDGE_PUNCTUATION).lower()


def is_verb_like(tokens: list[str], index: int) -> bool:
    """Whether ``tokens[index]`` reads as a finite verb: an auxiliary or common verb, a word
    right after a subject pronoun, or an "-ed"/"-s" word followed by a typical verb object."""
    word = bare(tokens[index])
    if word in AUXILIARIES or word in COMMON_VERBS or _PRONOUN_CONTRACTIONS.match(word):
        return True
    previous = tokens[index - 1] if index else ""
    if tokens[index][:1].islower() and bare(previous) in _SUBJECT_PRONOUNS:
        return True  # "she studied", "they allow"
    following = bare(tokens[index + 1]) if index + 1 < len(tokens) else ""
    if not tokens[index][:1].islower() or not (following in _VERB_FOLLOWERS or following[:1].isdigit()):
        return False
    if len(word) > 4 and word.endswith("ed"):
        return True
    # "The Danube flows into", "Google offers more": present tense right after a name.
    return (
        len(word) > 3
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is"))
        and previous[:1].isupper()
        and bare(previous) not in _DETERMINERS
    )


def first_verb_index(tokens: list[str]) -> int | None:
    return next((i for i in range(len(tokens)) if is_verb_like(tokens, i)), None)


def has_verb(text: str) -> bool:
    return first_verb_index(text.split()) is not None


def strip_intro(clause: str) -> str:
    """Remove leading introductory phrases: "Therefore, in 1980, X was" -> "X was"."""
    for _ in range(3):
        match = _INTRO_PHRASE.match(clause)
        if not match or match.group(1).lower() not in _INTRO_WORDS:
            break
        clause = clause[match.end() :]
    return clause.strip()


def subject_of(clause: str, max_words: int = 8) -> str | None:
    """The noun phrase before the first verb of ``clause`` (after introductory phrases).

    Returns None when there is no verb, the subject is long, or it looks like a fragment
    (starts with a preposition or relative pronoun, or contains a comma).
    """
    tokens = strip_intro(clause).split()
    verb = first_verb_index(tokens)
    if verb is None or verb == 0:
        return None
    words = tokens[:verb]
    while words and _ADVERB.match(bare(words[-1])):
        words.pop()  # "Trump also served" -> "Trump"
    if not words or len(words) > max_words:
        return None
    if bare(words[0]) in PREPOSITIONS | _RELATIVES or any(w.endswith(",") for w in words):
        return None
    return " ".join(words)


def starts_with_predicate(text: str) -> bool:
    """True for "served on ...", "would have been ...", "previously served as ..."."""
    tokens = text.split()
    if tokens and _ADVERB.match(bare(tokens[0])) and len(tokens) > 1:
        tokens = tokens[1:]
    return bool(tokens) and is_verb_like(tokens, 0) and not _PRONOUN_CONTRACTIONS.match(bare(tokens[0]))


def is_independent_clause(text: str, max_subject_words: int = 6) -> bool:
    """True for "the state has been ..." / "Neptune and the Sun are ...": subject + verb."""
    return subject_of(text, max_words=max_subject_words) is not None


def is_proper_name(phrase: str) -> bool:
    """Capitalised words, initials and name connectors: "Justice William O. Douglas"."""
    words = phrase.split()
    if not words or not words[0][:1].isupper():
        return False
    return words[-1] not in _NAME_CONNECTORS and all(w[:1].isupper() or w in _NAME_CONNECTORS for w in words)


def leading_name(text: str) -> str | None:
    """The capitalised name at the start of ``text`` ("Justice William O. Douglas."), if any."""
    words: list[str] = []
    for token in text.split():
        if token[:1].isupper() or (words and token in _NAME_CONNECTORS):
            words.append(token)
            if token[-1] in ",;:" or (token.endswith(".") and len(token) > 2):
                break  # a name ends at punctuation; "O." is an initial, keep going
        else:
            break
    while words and words[-1] in _NAME_CONNECTORS:
        words.pop()
    name = " ".join(words).rstrip(".,;:")
    return name or None


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def possessive(noun_phrase: str) -> str:
    return f"{noun_phrase}'" if noun_phrase.endswith("s") else f"{noun_phrase}'s"
