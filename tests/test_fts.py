import apsw
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.store.fts import TermMatcher, fts_row, match_query, term_strings


def fts_table() -> apsw.Connection:
    db = apsw.Connection(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(heading, body, meta, cjk, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    return db


def add(db, rowid, body, heading="", meta=""):
    row = fts_row(heading, body, meta)
    db.execute(
        "INSERT INTO t(rowid, heading, body, meta, cjk) VALUES (?,?,?,?,?)",
        (rowid, row.heading, row.body, row.meta, row.cjk),
    )


def ids(db, query):
    mq = match_query(query)
    if mq is None:
        return []
    return [
        r[0]
        for r in db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", (mq.expression,))
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_user_text_is_a_valid_query(query):
    """Whatever an agent types, the MATCH expression never raises an FTS5 syntax error."""
    db = fts_table()
    add(db, 1, "some text")
    mq = match_query(query)
    if mq is not None:
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", (mq.expression,)).fetchall()


def test_fts_syntax_in_queries_is_plain_text():
    db = fts_table()
    add(db, 1, "alpha NEAR beta")
    add(db, 2, "gamma")
    assert ids(db, 'alpha AND "unclosed') == [1]
    assert ids(db, "NOT gamma") == [2]  # NOT is a word here, gamma still matches
    assert ids(db, "body: gamma*") == [2]  # a column filter is just a word
    assert ids(db, "body:gamma") == []  # one punctuated word: the phrase "body gamma"
    assert ids(db, "(((") == []


def test_words_match_any_and_stem():
    db = fts_table()
    add(db, 1, "We decided to migrate the databases")
    add(db, 2, "Unrelated note")
    assert ids(db, "database decision") == [1]  # porter: databases ~ database
    assert ids(db, "what did we decide") == [1]  # stop words dropped, 'decide' stems


def test_irregular_forms_match_each_other():
    """Questions ask in the present what notes record in the past: porter keeps 'went'
    apart from 'go', so an irregular word matches every form of it."""
    db = fts_table()
    add(db, 1, "We went to Lisbon and bought a tram ticket")
    add(db, 2, "Going to the dentist tomorrow")
    add(db, 3, "The children drew a map")
    assert ids(db, "where did we go") == [1, 2]  # went, and going by stemming
    assert ids(db, "what did we buy") == [1]
    assert ids(db, "what did the child draw") == [3]
    assert ids(db, "who goes") == [1, 2]  # porter makes "goes" "goe": listed as a form
    # One word's forms are one query term: coverage counts it once.
    assert match_query("where did we go in Lisbon").terms == 2


def test_a_passage_holds_the_terms_fts5_would_match_in_it():
    """Ranking asks which passage holds the query's words: matched as the index matches
    them (stems, irregular forms, phrases in a row, CJK runs), weighted by idf."""
    match = match_query("where did we go with node.js and 数据库")
    matcher = TermMatcher(match, [1.0, 2.0, 1.0])
    went, split, cjk = term_strings(
        ["We went there on Node.js", "node and js are here", "我们的数据库 going"]
    )
    assert went == " we went there on node js "
    assert matcher.share(went) == 0.75  # go (as 'went') and node.js of go, node.js, 数据库
    assert matcher.share(split) == 0.0  # 'node' and 'js' apart are not the phrase
    assert matcher.share(cjk) == 0.5  # 'going' stems to 'go'; the run inside a longer one
    assert matcher.share(went, among=[1]) == 0.5  # only the terms asked about
    assert TermMatcher(match, [0.0, 0.0, 0.0]).share(went) == 0.0


def test_punctuated_words_match_as_phrases():
    db = fts_table()
    add(db, 1, "we run node.js 20")
    add(db, 2, "node and js separately: js is nice, node too")
    assert ids(db, "node.js") == [1]


def test_diacritics_are_folded():
    db = fts_table()
    add(db, 1, "Réunion à Zürich")
    assert ids(db, "reunion zurich") == [1]
    assert ids(db, "ZÜRICH") == [1]


def test_cjk_substrings_are_found():
    """Chinese, Japanese and Korean text is found by any substring of two characters or more."""
    db = fts_table()
    add(db, 1, "我们决定使用Postgres数据库。")
    add(db, 2, "今日はデータベースの移行を行った")
    add(db, 3, "데이터베이스를 백업했습니다")
    add(db, 4, "数学的な話")
    assert ids(db, "数据库") == [1]
    assert ids(db, "数据") == [1]
    assert ids(db, "postgres") == [1]  # Latin inside CJK text is its own word
    assert ids(db, "データベース") == [2]
    assert ids(db, "데이터베이스") == [3]
    assert ids(db, "数") == [1, 4]  # one character: prefix over the bigrams
    assert ids(db, "库") == [1]  # last character of a run
    assert ids(db, "库选") == []


def test_a_query_of_stop_words_alone_has_no_keyword_evidence():
    """'the' is in every note: matching it would answer with confidence about nothing."""
    assert match_query("the") is None and match_query("to be or not") is None
    assert match_query("to be or not hamlet").terms == 1


def test_a_question_words_clitic_is_not_a_term():
    """ "what's" used to be the phrase "what s", matching every chat line holding it."""
    assert match_query("what's the plan").clauses == match_query("plan").clauses
    assert match_query("didn't we pick it").clauses == match_query("pick").clauses
    assert match_query("isn't it") is None
    assert '"caroline s"' in match_query("Caroline's identity").expression


def test_term_count():
    assert match_query("the database decision").terms == 2
    assert match_query("数据库 postgres").terms == 2
    assert match_query("...") is None
