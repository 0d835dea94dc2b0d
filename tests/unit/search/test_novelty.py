"""Novelty against the archive (flat cost), batch selection, the near-copy family cap, the bench line."""
import re

import pytest

from whileai_ray.bench.search import bench_selection, format_line
from whileai_ray.search.family_cap import FamilyCap, family_key, skeleton
from whileai_ray.search.novelty import NoveltyIndex
from whileai_ray.situations.grid import build_axes, pairwise_cells
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.testing.seeded_rows import TOOLS

CELLS = pairwise_cells(build_axes(TOOLS))
WRITER = TemplateWriter(TOOLS, "", seed=0)
PROMPTS = [WRITER.write(CELLS[i % len(CELLS)], i // len(CELLS), 0).prompt for i in range(3000)]
BASE = ("Looking to check my order ORD-41087 today. The amount was $4423, paid on March 6. I can see it "
        "in my account but the status page will not load. Please tell me where it is now. Thanks in advance.")


def _jaccard(a, b):
    def sh(t):
        w = re.findall(r"[a-z0-9$@.'\-]+", t.lower())
        return set(w) | {x + " " + y for x, y in zip(w, w[1:])}
    sa, sb = sh(a), sh(b)
    return len(sa & sb) / len(sa | sb)


def test_exact_copy_near_copy_and_new_text():
    idx = NoveltyIndex()
    for p in PROMPTS[:500]:
        idx.add(p)
    assert idx.novelty(PROMPTS[10]) == 0.0
    assert idx.novelty("Zebras quietly juggle purple violins underwater tonight") == 1.0
    idx.add(BASE)
    near = BASE.replace("today", "right now")
    assert idx.novelty(near) < 0.35
    assert idx.near_copy(near, 0.6)
    assert not idx.near_copy("What is the capital of Mongolia, and who wrote War and Peace?", 0.6)
    assert len(idx) == 501


def test_similarity_estimates_jaccard_for_similar_pairs():
    errors = []
    for i in range(0, 400, 4):
        idx = NoveltyIndex()
        idx.add(PROMPTS[i])
        words = PROMPTS[i].split()
        edited = " ".join(words[: len(words) // 2] + ["totally", "different", "ending", "here"])
        true = _jaccard(PROMPTS[i], edited)
        _, est = idx.similarity(edited)
        if true >= 0.4:
            errors.append(abs(est - true))
    assert len(errors) > 30
    assert sum(errors) / len(errors) < 0.12
    assert sum(e < 0.2 for e in errors) >= 0.9 * len(errors)   # LSH misses a few pairs near 0.4


def test_cost_per_call_stays_flat_as_the_archive_grows():
    idx = NoveltyIndex()
    for _ in range(3000):       # a crowded bucket: thousands of near-copies of one prompt
        idx.add(BASE)
    for p in PROMPTS:
        idx.add(p)
    probes = [WRITER.write(CELLS[i % len(CELLS)], 50_000 + i, 1).prompt for i in range(300)]
    scores = [idx.novelty(p) for p in probes + [BASE.replace("today", "now")] * 100]
    assert len(scores) == 400 and all(0.0 <= s <= 1.0 for s in scores)   # per-call cost: bench micro lines


def test_select_prefers_novel_candidates_and_spreads_the_batch():
    idx = NoveltyIndex()
    for p in PROMPTS[:200]:
        idx.add(p)
    fresh = "Can you translate my grocery list into Portuguese before the weekend market opens?"
    fresh_twin = fresh.replace("weekend", "Saturday")
    other = "How many moons does Jupiter have, roughly, as of the latest count from NASA?"
    cands = [PROMPTS[0], PROMPTS[1], fresh, fresh_twin, other]
    picked = idx.select(cands, 2, seed=0)
    assert {i for i, _ in picked} in ({2, 4}, {3, 4})
    assert all(score > 0.7 for _, score in picked)
    everything = idx.select(cands, 10, seed=0)
    assert sorted(i for i, _ in everything) == [0, 1, 2, 3, 4]
    assert [i for i, _ in everything][-2:] in ([0, 1], [1, 0])
    assert len(idx) == 200        # selecting archives nothing


def test_select_tie_break_is_seeded():
    idx = NoveltyIndex()
    cands = [f"completely unrelated topic number {w} about {w}s" for w in
             ("apple", "river", "castle", "violin", "meteor", "garden", "tunnel", "glacier")]
    orders = {tuple(i for i, _ in idx.select(cands, 8, seed=s)) for s in range(6)}
    assert len(orders) > 1
    assert idx.select(cands, 8, seed=2) == idx.select(cands, 8, seed=2)
    assert idx.select(cands, 0, seed=2) == []


def test_family_skeleton_blanks_what_changes_between_worlds():
    a = "Check order ORD-41087 for Maria Lopez, paid $44 on March 6. Email maria.lopez12@example.com."
    b = "Check order ORD-20211 for Tom Kim, paid $310 on May 2. Email tom.kim9@example.com."
    c = "Cancel order ORD-20211 for Tom Kim, paid $310 on May 2. Email tom.kim9@example.com."
    assert skeleton(a) == "check order # for N paid $ on D email @"
    assert family_key(a) == family_key(b) != family_key(c)


def test_family_cap_refuses_past_the_cap_but_notes_always_count():
    cap = FamilyCap(2)
    texts = [f"Check order ORD-{1000 + i} for me, paid ${10 + i}." for i in range(4)]
    assert [cap.admit(t) for t in texts] == [True, True, False, False]
    assert cap.admit("Something else entirely.")
    assert not cap.allowed(texts[0])
    cap.note(texts[0])
    assert cap.stats() == {"cap": 2, "families": 2, "refused": 2, "largest": 3}
    with pytest.raises(ValueError, match="family cap must be an int >= 1"):
        FamilyCap(0)


def test_template_prompts_rarely_collide_in_one_family():
    cap = FamilyCap(3)
    admitted = sum(cap.admit(p) for p in PROMPTS)
    assert admitted > 0.95 * len(PROMPTS)


def test_bench_selection_reports_both_archive_sizes():
    got = bench_selection(sizes=(200, 4000), probes=200)
    assert set(got["ms_per_row"]) == {200, 4000}
    assert all(0 < ms < 2.0 for ms in got["ms_per_row"].values())
    assert got["ratio"] == pytest.approx(got["ms_per_row"][4000] / got["ms_per_row"][200], rel=0.01)
    assert "selection cost per row: 200 rows" in format_line(got)


_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_FIRST_BLANKS = (
    (re.compile(r"\S+@\S+"), " @ "),
    (re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?"), " $ "),
    (re.compile(rf"\b(?:{_MONTHS})\b\.?\s*\d{{1,2}}(?:st|nd|rd|th)?\b", re.I), " D "),
    (re.compile(r"\b[\w-]*\d[\w-]*\b"), " # "),
)


def _first_skeleton(prompt):
    """The skeleton as first written (four plain passes and a token loop): the reference that the
    faster one must equal on every input."""
    text = str(prompt)
    for pattern, blank in _FIRST_BLANKS:
        text = pattern.sub(blank, text)
    out, start = [], True
    for m in re.finditer(r"[A-Za-z'#$@]+|[.!?]", text):
        tok = m.group(0)
        if tok in ".!?":
            start = True
            continue
        if tok in ("#", "$", "@", "D"):
            pass
        elif not start and tok[:1].isupper() and tok != "I" and not tok.startswith("I'"):
            tok = "N"
        else:
            tok = tok.lower()
        if out and tok == "N" and out[-1] == "N":
            continue
        out.append(tok)
        start = False
    return " ".join(out)


def test_the_skeleton_equals_the_first_definition_on_prompts_and_tricky_text():
    import random
    rng = random.Random(7)
    vocab = ["May", "may", "MAY", "March", "mar.", "Sept", "sept.", "September", "Mayday", "Marches", "jan", "Jan.",
             "5", "05", "5th", "5TH", "12", "123", "1st", "2nd", "3rd", "Dec", "dec.", "ORD-41087", "-12", "a-1",
             "x_1", "$44", "$ 4,423.50", "$", "bob@example.com", "@", "a@b", "Maria", "Lopez", "I", "I'm", "Tom",
             ".", "!", "?", ",", "the", "paid", "\n", "é", "Émile", "O'Neil", "'", "#", "D", "N", "MayFair",
             "12th", "th", "May5", "5May", "Apr-3", "apr 3rd", "Aug.  4", "oct\t9", "Junes", "jul 32", "Feb 1234"]
    seps = [" ", "", "  ", ". ", ", ", "-", "\n"]
    texts = PROMPTS + ["".join(rng.choice(vocab) + rng.choice(seps) for _ in range(rng.randint(1, 14)))
                       for _ in range(20_000)]
    assert [skeleton(t) for t in texts] == [_first_skeleton(t) for t in texts]


def test_tables_grown_by_adding_equal_the_ones_a_snapshot_rebuilds_whatever_the_capacity():
    import numpy as np
    grown = NoveltyIndex()                       # 1,024 slots a band, doubled three times below
    reserved = NoveltyIndex(capacity=1_000_000)  # capacity reserves columns, never the tables' size
    for p in PROMPTS + [p + " again" for p in PROMPTS[:3000]]:
        grown.add(p)
        reserved.add(p)
    restored = NoveltyIndex()
    restored.load_state(grown.state())
    for other in (reserved, restored):
        assert other._bits == grown._bits == 13
        assert np.array_equal(other._heads, grown._heads)
        assert np.array_equal(other._next.view(), grown._next.view())
    probe = BASE.replace("today", "right now")
    assert grown.similarity(probe) == restored.similarity(probe) == reserved.similarity(probe)


def test_the_bucket_rebuild_on_two_threads_equals_the_one_on_one(monkeypatch):
    import numpy as np
    from whileai_ray.search import novelty
    rng = np.random.default_rng(3)
    stored = rng.integers(0, 64, size=(20_000, novelty.K), dtype=np.uint16)   # few values: long chains
    one = novelty._buckets(stored, 12)
    monkeypatch.setattr(novelty, "_THREADED_FROM", 0)
    two = novelty._buckets(stored, 12)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])
    assert (one[1] >= 0).mean() > 0.8                     # most ids do have a bucket mate


def test_a_restore_that_builds_its_tables_on_a_thread_answers_like_the_archive_it_came_from(monkeypatch):
    import numpy as np
    from whileai_ray.search import novelty
    grown = NoveltyIndex()
    for p in PROMPTS[:3000]:
        grown.add(p)
    monkeypatch.setattr(novelty, "_THREADED_FROM", 0)
    restored = NoveltyIndex()
    restored.load_state(grown.state())
    probe = BASE.replace("today", "right now")
    assert restored.similarity(probe) == grown.similarity(probe)      # waits for the tables
    assert restored._building is None
    assert np.array_equal(restored._heads, grown._heads) and np.array_equal(restored._next.view(), grown._next.view())
    again = NoveltyIndex()
    again.load_state(grown.state())
    assert again.add("a prompt nobody wrote before") == grown.add("a prompt nobody wrote before") == 3000
    assert again.state().meta == grown.state().meta


def test_an_exact_copy_is_found_by_its_first_id_even_past_the_buckets_reach_and_after_a_restore():
    idx = NoveltyIndex(bucket_cap=2)
    idx.add(BASE)                                            # id 0
    for i in range(40):                                      # near-copies crowd BASE out of its buckets' reach
        idx.add(BASE.replace("today", f"on day {i}"))
    idx.add(BASE)                                            # a second copy: the first id still answers
    assert idx.similarity(BASE) == (0, 1.0)
    restored = NoveltyIndex()
    restored.load_state(idx.state())
    assert restored.similarity(BASE) == (0, 1.0)
    assert restored.novelty(BASE) == 0.0


def test_a_column_adopts_a_fresh_array_without_copying_and_never_writes_into_it():
    import numpy as np
    from whileai_ray.core.columns import Column
    fresh = np.arange(5000, dtype=np.int32).reshape(-1, 2).copy()
    col = Column.of(fresh, np.int32, width=2)
    assert col._a is fresh                                   # adopted: a restore's table is not held twice
    col.append([7, 7])
    assert col.view().shape == (2501, 2) and col.view()[-1].tolist() == [7, 7]
    assert fresh.shape == (2500, 2) and fresh[-1].tolist() == [4998, 4999]     # the append grew a copy
    shared = np.arange(3000, dtype=np.uint64)
    view = shared[:2000]                                     # a view (e.g. of a snapshot frame): copied
    col = Column.of(view, np.uint64)
    assert col._a is not view and not np.shares_memory(col._a, shared)
    col.extend(np.zeros(5, dtype=np.uint64))
    assert shared[2000:2005].tolist() == [2000, 2001, 2002, 2003, 2004]


def test_an_index_without_text_keys_scores_by_sketch_and_restores_without_them():
    idx = NoveltyIndex(exact=False)                          # the planner's: it knows exact copies itself
    for p in PROMPTS[:500]:
        idx.add(p)
    assert idx._exact is None and idx._keys is None
    assert idx.novelty(PROMPTS[10]) == 0.0                   # the copy is found by its sketch
    assert idx.novelty("Zebras quietly juggle purple violins underwater tonight") == 1.0
    st = idx.state()
    assert set(st.logs) == {"sk16"}
    again = NoveltyIndex(exact=False)
    again.load_state(st)
    probe = BASE.replace("today", "right now")
    assert again.similarity(probe) == idx.similarity(probe) and again.novelty(PROMPTS[10]) == 0.0
