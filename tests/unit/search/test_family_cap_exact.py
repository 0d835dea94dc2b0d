"""``family_cap.skeleton``'s tighter token loop blanks exactly what the old loop blanked (issue 32),
and its dates, matched on lower-cased ASCII text without ``re.I``, are the spans ``_DATE`` matches;
it blanks a text sentence by sentence, each sentence once per process (kept), and gives the old
loop's answer whether a sentence is kept, new, or forgotten when the kept ones were cleared.

The old loop (commit 50aa2a8) is kept here and both run on varied prompts: names across
sentence stops, "I" and "I'm", blanks next to names, unicode capitals, empty and very long text,
and the prompts the template writer writes.
"""
import random

from whileai_ray.search import family_cap as fc
from whileai_ray.search.family_cap import FamilyCap, family_key, skeleton
from whileai_ray.core.rng import short_hash
from whileai_ray.situations.grid import build_axes, pairwise_cells
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.testing.seeded_rows import TOOLS


STOPS = frozenset(".!?")


def old_skeleton(prompt):
    text = str(prompt)
    if "@" in text:
        text = fc._EMAIL.sub(" @ ", text)
    if "$" in text:
        text = fc._AMOUNT.sub(" $ ", text)
    text = fc._IDS.sub(" # ", fc._DATE.sub(" D ", text))
    out = []
    start = True
    last = None
    for tok in fc._TOKEN.findall(text):
        if tok in STOPS:
            start = True
            continue
        if tok in fc._BLANKED:
            pass
        elif not start and tok[0].isupper() and tok != "I" and not tok.startswith("I'"):
            tok = "N"
            if last == "N":
                start = False
                continue
        else:
            tok = tok.lower()
        out.append(tok)
        last = tok
        start = False
    return " ".join(out)


FIXED = ["", " ", ".", "Maria Lopez", "Check order ORD-41087 for Maria Lopez, paid $44 on March 6.",
         "I'm Tom. Kim Lee and I met D Smith on May 2nd; I'd pay $ 3,100.50 to x@y.com.",
         "Hi Ana Bel Cruz. Bob. Al Bo! Cy? Dee Eve # Fay $ Gus @ Hal D Ivy", "ÉCOLE Über Ärger çà",
         "I I I I'm I've IOU Iris", "sept 3rd, Sep. 14 jan 1 DECEMBER 25th may 5 maybe 6",
         "Name Name. Name Name! name Name? Name" * 200, "a" * 20000, "\ud800 Bad Surrogate \udfff Tail"]
WORDS = ["Maria", "Lopez", "I", "I'm", "order", "ORD-12", "$44", "x@y.com", "March", "6th", ".", "!", "?",
         "the", "D", "#", "Ünal", "it's", "Tom", "KIM", "99", "e-mail", ",", "and", "May", "İ", "ſep",
         "Jan.", "AUG", "3rd", "oct.4", "mar-5", "Sept", "12", "jUnE", "x-Jan", "mayday", "Dec.31"]


def test_skeleton_blanks_what_the_old_loop_blanked():
    r = random.Random(32)
    prompts = list(FIXED)
    for _ in range(3000):
        prompts.append(" ".join(r.choice(WORDS) for _ in range(r.randrange(0, 40))))
    w = TemplateWriter(TOOLS, "", 0)
    cells = pairwise_cells(build_axes(TOOLS, "", None))
    prompts += [w.write(cells[i % len(cells)], i, i % 3).prompt for i in range(600)]
    prompts += [w.probe(i).prompt for i in range(100)]
    for p in prompts:
        assert skeleton(p) == old_skeleton(p), p[:120]
        assert family_key(p) == short_hash("family", old_skeleton(p))


def test_kept_sentences_give_the_same_skeleton_as_new_ones(monkeypatch):
    r = random.Random(46)
    pieces = ["Maria", "Lopez", ".", "!", "?", "..", "I", "I'm", "Tom", "D", "#", "$", "@", "x@y.com", "$5",
              "ORD-7", "March 6.", "Jan. 5", "the", "Kim", "É", "a.b", "?!", " ", "3.5"]
    texts = ["".join(r.choice(pieces) + r.choice(["", " ", " "]) for _ in range(r.randrange(0, 30)))
             for _ in range(4000)]
    monkeypatch.setattr(fc, "SENTENCES_KEPT", 50)            # cleared again and again on the way
    fc._SENTENCES.clear()
    for t in texts + texts:                                  # new, then (mostly) kept
        assert skeleton(t) == old_skeleton(t), repr(t)
    assert 0 < len(fc._SENTENCES) <= 50
    long = "Maria Lopez and " * 100 + "Tom"               # one sentence past SENTENCE_CHARS: not kept
    assert skeleton(long) == old_skeleton(long) and long not in fc._SENTENCES


def test_the_cap_decides_as_before_on_near_copies():
    cap = FamilyCap(2)
    asks = [f"Check order ORD-{n} for Maria Lopez, paid ${n % 97} on March {1 + n % 27}." for n in range(10)]
    assert [cap.admit(a) for a in asks] == [True, True] + [False] * 8
    assert cap.stats()["refused"] == 8 and cap.family(asks[0]) == short_hash("family", old_skeleton(asks[0]))


def test_ids_are_blanked_as_the_one_pattern_blanks_them_on_any_text():
    """The ids pass runs ``_IDS`` only on the stretches of word characters and "-" that hold a
    digit: on text of every character kind that bounds or joins them (unicode letters and digits,
    "_", "-", "'", stops, spaces) it gives what ``_IDS.sub`` gives on the whole text."""
    r = random.Random(45)
    alphabet = ["a", "Z", "1", "0", "٣", "²", "é", "_", "-", "--", "'", ".", " ", "\n", "$", "#", "x9", "ORD-", "-7"]
    texts = ["", "-", "1", "-1-", "_1_", "a-", "²", "٣x", "ORD-41087 and 5th, -12 x_1 a-1-b 1-- --2"]
    texts += ["".join(r.choice(alphabet) for _ in range(r.randrange(0, 30))) for _ in range(20_000)]
    for t in texts:
        assert fc._ids_blanked(t) == fc._IDS.sub(" # ", t), repr(t)
