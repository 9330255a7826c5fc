"""The project's one tokenizer: CJK characters are tokens of their own in every script the project meets."""
from babelrag.tokens import content_words, count_tokens, tokenize


def test_cjk_characters_are_tokens_and_words_are_runs():
    assert tokenize("東京で会議 held_in Tokyo, 2026!") == ["東", "京", "で", "会", "議", "held", "in", "tokyo", "2026"]
    assert tokenize("ﾃｽﾄ 서울") == ["ﾃ", "ｽ", "ﾄ", "서", "울"]  # half-width kana and hangul too
    assert tokenize("Die EU-Kommission") == ["die", "eu", "kommission"]


def test_count_matches_tokenize():
    for text in ("", "Ein kurzer Satz.", "北京和上海 were compared", "مرحبا بالعالم"):
        assert count_tokens(text) == len(tokenize(text))


def test_content_words_keep_numbers_and_drop_stop_words():
    assert content_words("How many ships did the port of Rotterdam handle in 2025?") == {
        "ships", "port", "rotterdam", "handle", "2025"}
