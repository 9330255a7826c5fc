"""Every byte of a user's text file decoded or refused (issue 32, items 3 and 4), through the CLI a user runs.

Real text: NTREX-128 news leads (tests/fixtures/ntrex_samelang, CC BY-SA 4.0; news-please field names)
re-encoded the way old tools write them (Latin-1, windows-1252, UTF-16, a UTF-8 byte-order mark); published
GaRAGe / XRAG record shapes from tests/fixtures/external.
"""
import codecs
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from babelrag.errors import InputError
from babelrag.records import Article
from babelrag.rows import iter_jsonl
from babelrag.store import BuildStore
from babelrag.text_input import TextLines, read_text

BIN = Path(sys.executable).parent / "babelrag"
NTREX = Path(__file__).parent / "fixtures" / "ntrex_samelang" / "articles.jsonl"
EXTERNAL = Path(__file__).parent / "fixtures" / "external"


def _cli(*args, cwd=None):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "400"}, timeout=600)


def ntrex(language, n, encoding="utf-8"):
    """The first ``n`` NTREX articles of ``language`` whose text ``encoding`` can hold, news-please fields."""
    out = []
    for line in NTREX.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if not row["id"].startswith(f"{language}-"):
            continue
        try:
            json.dumps(row, ensure_ascii=False).encode(encoding)
        except UnicodeEncodeError:
            continue
        out.append({k: row[k] for k in ("id", "title", "maintext", "language", "date_publish", "url")
                    if k in row})
        if len(out) == n:
            return out
    raise AssertionError(f"NTREX has fewer than {n} {language} articles in {encoding}")


def encode_lines(rows, encoding, bom=b""):
    """JSON lines as an editor or an old exporter writes them: characters as they are (not \\u escapes)."""
    return bom + "".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) + "\n"
                         for r in rows).encode(encoding)


def ingest(tmp_path, data: bytes, languages=("en", "de", "fr", "es")):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(data)
    cfg = {"project": {"build_dir": str(tmp_path / "build"), "languages": list(languages)},
           "corpus": {"inputs": [{"path": str(corpus), "format": "jsonl"}], "min_tokens": 10,
                      "language_confidence": 0.0}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    res = _cli("run", "-c", tmp_path / "c.yaml", "--until", "ingest")
    return res, corpus


def stored(tmp_path):
    return {a.id: a for a in BuildStore(tmp_path / "build").read("ingest", Article)}


def report(tmp_path):
    return json.loads((tmp_path / "build" / "run_report.json").read_text(encoding="utf-8"))["stages"][0]


@pytest.mark.parametrize("encoding,languages", [("latin-1", ("de", "es")), ("cp1252", ("fr", "de"))])
def test_a_legacy_encoded_corpus_is_detected_and_stored_without_replacement_characters(tmp_path, encoding,
                                                                                       languages):
    """Table row: 'a Latin-1 JSONL corpus: 18 of 35 articles stored with U+FFFD, nothing counted, exit 0'."""
    rows = [r for lang in languages for r in ntrex(lang, 6, encoding)]
    assert any(not json.dumps(r, ensure_ascii=False).isascii() for r in rows)
    res, corpus = ingest(tmp_path, encode_lines(rows, encoding))
    assert res.returncode == 0, res.stderr
    arts = stored(tmp_path)
    assert set(arts) == {r["id"] for r in rows}
    for r in rows:  # every character as written, none replaced
        assert (arts[r["id"]].title, arts[r["id"]].text) == (r["title"].strip(), r["maintext"].strip())
    assert not any("\ufffd" in a.title + a.text for a in arts.values())
    stage = report(tmp_path)
    assert f"{corpus} read as cp1252" in stage["note"]  # the run says how it read the file
    assert "cp1252" in res.stdout + res.stderr


def test_utf8_with_a_byte_order_mark_keeps_its_first_article(tmp_path):
    """Table row: 'a UTF-8 file with a BOM: first article dropped as bad JSON'."""
    rows = ntrex("de", 4)
    res, _ = ingest(tmp_path, encode_lines(rows, "utf-8", codecs.BOM_UTF8))
    assert res.returncode == 0, res.stderr
    assert set(stored(tmp_path)) == {r["id"] for r in rows}
    assert "bad-json" not in report(tmp_path)["skipped"]


def test_utf16_with_a_byte_order_mark_is_read_and_named(tmp_path):
    """Table row: 'a UTF-16 file: reported as bad JSON with no word about the encoding'."""
    rows = ntrex("fr", 3) + ntrex("en", 3)
    res, corpus = ingest(tmp_path, encode_lines(rows, "utf-16"))
    assert res.returncode == 0, res.stderr
    arts = stored(tmp_path)
    assert {k: (a.title, a.text) for k, a in arts.items()} == \
        {r["id"]: (r["title"].strip(), r["maintext"].strip()) for r in rows}
    assert f"{corpus} read as UTF-16 (little-endian byte-order mark)" in report(tmp_path)["note"]


def test_utf16_without_a_byte_order_mark_is_refused_naming_utf16(tmp_path):
    res, corpus = ingest(tmp_path, encode_lines(ntrex("de", 3), "utf-16-le"))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert f"{corpus}: looks like UTF-16LE (UTF-16 without a byte-order mark)" in res.stderr
    assert "iconv -f UTF-16LE -t UTF-8" in res.stderr
    assert BuildStore(tmp_path / "build").manifest("ingest") is None  # nothing committed


def test_a_file_mixing_utf8_and_latin1_is_refused_at_the_line_and_byte(tmp_path):
    utf8, latin = ntrex("de", 2), ntrex("es", 2, "latin-1")
    data = encode_lines(utf8, "utf-8") + encode_lines(latin, "latin-1")
    res, corpus = ingest(tmp_path, data)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    line3 = json.dumps(latin[0], ensure_ascii=False)
    col = next(k for k, ch in enumerate(line3) if not ch.isascii())  # 0-based: the first non-ASCII character
    byte = line3[col].encode("latin-1")[0]
    offset = len(encode_lines(utf8, "utf-8")) + len(line3[:col].encode("latin-1"))
    message = " ".join(res.stderr.split())
    assert (f"{corpus}:3: byte 0x{byte:02x} at column {col + 1} (file offset {offset}) is not UTF-8, although "
            f"line 1 is: the file mixes encodings") in message
    assert BuildStore(tmp_path / "build").manifest("ingest") is None


def test_wrong_field_types_and_lone_surrogates_are_counted_skips_naming_file_and_line(tmp_path):
    """Table row: 'a number or list in title/maintext/url; a lone surrogate: traceback from deep inside
    ingest, no line named'."""
    good = ntrex("de", 3)
    base = ntrex("en", 5)
    bad = [dict(base[0], title=2024), dict(base[1], maintext=["Erster Absatz.", "Zweiter Absatz."]),
           dict(base[2], url={"href": "https://example.org"}), dict(base[3], id=[1, 2])]
    surrogate = json.dumps(dict(base[4], title="Half a pair \ud800 here"))  # ensure_ascii: written as \ud800
    assert "\\ud800" in surrogate
    res, corpus = ingest(tmp_path, encode_lines([*good, *bad, surrogate + "\n"], "utf-8"))
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert set(stored(tmp_path)) == {r["id"] for r in good}
    stage = report(tmp_path)
    assert stage["skipped"]["bad-field"] == 4 and stage["skipped"]["lone-surrogate"] == 1
    assert f"bad-field: 4 input line(s) skipped, first {corpus}:4 field 'title' must be a string or null, got int" \
        in stage["note"]
    assert f"lone-surrogate: 1 input line(s) skipped, first {corpus}:8 field 'title' holds a lone surrogate " \
           "\\ud800" in stage["note"]


def test_text_lines_decode_every_shape_the_same_and_name_what_they_refuse(tmp_path):
    rows = ntrex("de", 3, "cp1252")
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    heard = {}
    for name, data in {"plain": text.encode(), "bom": codecs.BOM_UTF8 + text.encode(),
                       "utf16be": codecs.BOM_UTF16_BE + text.encode("utf-16-be"), "utf32": text.encode("utf-32"),
                       "cp1252": text.encode("cp1252"), "crlf": text.replace("\n", "\r\n").encode()}.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        assert read_text(path, on_encoding=lambda p, e: heard.setdefault(p.name, e.describe())) == text, name
    assert heard == {"utf16be.jsonl": "UTF-16 (big-endian byte-order mark)",  # UTF-8 with a BOM is plain UTF-8
                     "utf32.jsonl": "UTF-32 (little-endian byte-order mark)",
                     "cp1252.jsonl": "cp1252 (not UTF-8 from line 1; detected by charset-normalizer)"}
    for name, data, expected in [
        ("gz", b"\x1f\x8b\x08\x00\x00", "gzip-compressed, not a text file; decompress it first"),
        ("nul", b'{"a": 1}\n\x00\x00\x01', ":2: NUL byte at file offset 9: a binary file"),
    ]:
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        with pytest.raises(InputError, match=expected):
            list(TextLines(path))
    # a lone surrogate is a bad line (kept apart by callers that count), a valid pair is a character
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"a": "\\ud83d\\ude00"}\n{"b": ["x", "\\udc00"]}\n', encoding="utf-8")
    got = list(iter_jsonl(path, keep_bad=True))
    assert got[0] == (1, {"a": "\U0001F600"})
    assert got[1][1].kind == "lone-surrogate" and "field 'b'[1] holds a lone surrogate \\udc00" in got[1][1].detail
    with pytest.raises(InputError, match=r"pairs.jsonl:2: field 'b'\[1\] holds a lone surrogate"):
        list(iter_jsonl(path))


def _garage_rows():
    return [json.loads(line) for line in (EXTERNAL / "garage.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]


def test_release_convert_refuses_a_lone_surrogate_naming_file_line_and_field(tmp_path):
    """Table row (release convert): a lone surrogate ended in a UnicodeEncodeError traceback."""
    rows = _garage_rows()
    rows[1]["question"] = rows[1]["question"][:20] + "\ud83d"  # half of an emoji, as a broken exporter cuts it
    src = tmp_path / "garage.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = _cli("release", "convert", src, "--format", "garage", "--out", tmp_path / "rel")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert f"{src}:2: field 'question' holds a lone surrogate \\ud83d" in res.stderr
    assert not (tmp_path / "rel").exists()


def test_release_convert_reads_published_records_saved_with_a_bom_or_as_utf16(tmp_path):
    """A GaRAGe file saved by a Windows editor (UTF-8 with a byte-order mark, or UTF-16) converts to the same
    release as the plain file; it used to be refused: 'line 1: not valid JSON'."""
    src = EXTERNAL / "xrag.jsonl"
    text = src.read_text(encoding="utf-8")
    plain = _cli("release", "convert", src, "--format", "xrag", "--out", tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr
    for name, data in (("bom", codecs.BOM_UTF8 + text.encode()), ("utf16", text.encode("utf-16"))):
        path = tmp_path / name / "xrag.jsonl"
        path.parent.mkdir()
        path.write_bytes(data)
        res = _cli("release", "convert", path, "--format", "xrag", "--out", tmp_path / f"{name}-rel")
        assert res.returncode == 0, res.stderr
        assert res.stdout.split("->")[:2] == plain.stdout.split("->")[:2]
        from babelrag.evaluators.release_reader import load_instances

        assert load_instances(tmp_path / f"{name}-rel") == load_instances(tmp_path / "plain")


def test_answers_file_with_a_lone_surrogate_or_wrong_types_exits_2_naming_each_line(tmp_path):
    """Table row (evaluate run --answers): a lone surrogate went on into scoring; every bad line is named and
    nothing is scored (no answer silently dropped: the run is refused, exit 2)."""
    from babelrag.evaluators.release_reader import load_instances
    from babelrag.release.external import convert_external

    convert_external(EXTERNAL / "garage.jsonl", "garage", tmp_path / "g")
    insts = load_instances(tmp_path / "g")
    lines = [json.dumps({"instance_id": insts[0].id, "model": "mine", "answer": "Fine [cite_1]."}),
             json.dumps({"instance_id": insts[1].id, "model": "mine", "answer": "Cut \udcff here [cite_1]."}),
             json.dumps({"instance_id": insts[2].id, "model": "mine", "answer": ["a", "list"]}),
             json.dumps({"instance_id": 7, "model": "mine", "answer": "x"})]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = {"project": {"name": "t", "build_dir": str(tmp_path / "build")},
           "llm": {"endpoints": {"judge-1": {"base_url": "http://127.0.0.1:9/v1", "model": "j"}},
                   "default_endpoint": "judge-1", "progress": False},
           "evaluate": {"judges": ["judge-1"]}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    res = _cli("evaluate", "run", tmp_path / "g", "-c", tmp_path / "c.yaml", "--answers", answers,
               "--out", tmp_path / "o")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    message = " ".join(res.stderr.split())
    assert "3 invalid answer line(s)" in message
    assert f"{answers}:2: field 'answer' holds a lone surrogate \\udcff" in message
    assert f"{answers}:3: field 'answer' must be a string" in message
    assert f"{answers}:4: field 'instance_id' must be a string" in message
    assert not (tmp_path / "o").exists()


def test_release_convert_of_a_beir_folder_names_a_mistyped_corpus_field_by_line(tmp_path):
    beir = Path(__file__).parent / "fixtures" / "release" / "beir"
    shutil.copytree(beir, tmp_path / "beir")
    corpus = tmp_path / "beir" / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows[1]["title"] = 42
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = _cli("release", "convert", tmp_path / "beir", "--format", "beir", "--out", tmp_path / "rel")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{corpus}:2: corpus 'd2': title must be a string, got int" in " ".join(res.stderr.split())
    assert not (tmp_path / "rel").exists()


def test_events_and_gazetteer_files_are_decoded_and_their_field_types_checked(tmp_path):
    from babelrag.construct.crosslingual import load_events
    from babelrag.construct.ner import Gazetteer
    from babelrag.errors import ConfigError

    events = tmp_path / "events.jsonl"
    lines = [{"event_id": "e1", "en": "Earthquake hits Sulawesi", "de": "Erdbeben auf Sulawesi erschüttert Palu"}]
    events.write_bytes(encode_lines(lines, "utf-16"))  # saved by a Windows editor
    assert load_events(events, ["en", "de"])[0]["de"] == "Erdbeben auf Sulawesi erschüttert Palu"
    events.write_bytes(encode_lines([*lines, {"event_id": "e2", "en": "Rally", "de": ["Kundgebung"]}], "utf-8"))
    with pytest.raises(InputError, match=r"events.jsonl:2: the description in 'de' must be a string, got list"):
        load_events(events, ["en", "de"])
    gazetteer = tmp_path / "gazetteer.jsonl"
    gazetteer.write_bytes(encode_lines([{"name": "Müller", "aliases": ["Thomas Müller"]}], "cp1252"))
    assert Gazetteer.load(gazetteer).find("Thomas Müller trifft") != []
    gazetteer.write_text(json.dumps({"name": "Palu", "aliases": 3}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"gazetteer.jsonl:1: expected .* with string names"):
        Gazetteer.load(gazetteer)


def test_a_config_saved_in_latin1_or_with_a_bom_loads(tmp_path):
    from babelrag.config import load_config

    text = "project:\n  name: Réseau d'actualités\n  build_dir: build\n"
    for name, data in (("latin1.yaml", text.encode("latin-1")), ("bom.yaml", codecs.BOM_UTF8 + text.encode())):
        (tmp_path / name).write_bytes(data)
        assert load_config(tmp_path / name).project.name == "Réseau d'actualités"
