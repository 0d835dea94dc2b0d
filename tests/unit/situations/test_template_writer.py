"""The offline template writer: worlds, phrasings, realized tags, probes, seeds, mutations."""
import re
from collections import Counter

import pytest

from whileai_ray.core.rng import short_hash
from whileai_ray.situations import text_bank as tb
from whileai_ray.situations.grid import build_axes, cell_key, pairwise_cells, tier_of
from whileai_ray.situations.phrasing import apply_texture
from whileai_ray.situations.probes import FAMILIES
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.testing.seeded_rows import TOOLS

CELLS = pairwise_cells(build_axes(TOOLS))
WRITER = TemplateWriter(TOOLS, "", seed=0)
SAMPLE = [WRITER.write(CELLS[i % len(CELLS)], i // len(CELLS) + 7 * i, i % 3) for i in range(6000)]


def _cell(**kw):
    cell = {"tool": "lookup_order", "rule": "unspecified", "stance": "ordinary",
            "world_state": "entity exists", "tool_condition": "success", "history": "fresh"}
    cell.update(kw)
    return cell


def _tagged(key, value, texture="standard"):
    out = [s for s in SAMPLE if s.tags.get(key) == value
           and (texture is None or s.tags.get("texture", "standard") == texture)]
    assert len(out) >= 5, (key, value, len(out))
    return out


def _first_sentence(text):
    return re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]


def test_same_arguments_give_the_same_situation():
    again = TemplateWriter(TOOLS, "", seed=0)
    for cell in CELLS[:10]:
        assert WRITER.write(cell, 5, 2).to_dict() == again.write(cell, 5, 2).to_dict()


def test_scenario_id_names_cell_seed_and_instance():
    cell = CELLS[3]
    s = WRITER.write(cell, 42)
    assert s.scenario_id == "sc-" + short_hash(cell_key(cell), 0, 42)
    assert re.fullmatch(r"sc-[0-9a-f]{10}", s.scenario_id)
    assert TemplateWriter(TOOLS, "", seed=1).write(cell, 42).scenario_id != s.scenario_id
    assert s.dims == cell and s.writer_model == "template" and s.arm == "structured"


def test_phrasings_keep_the_world_and_change_the_words():
    for cell in CELLS[:20]:
        worded = [WRITER.write(cell, 9, k) for k in range(8)]
        assert len({w.prompt for w in worded}) == 8
        for w in worded:
            assert (w.scenario_id, w.ref_ids, w.reference, w.ask_family, w.world_state, w.tier) == (
                worded[0].scenario_id, worded[0].ref_ids, worded[0].reference,
                worded[0].ask_family, worded[0].world_state, worded[0].tier)
        assert [w.phrasing_index for w in worded] == list(range(8))


def test_instances_are_different_worlds():
    cell = _cell()
    worlds = [WRITER.write(cell, i) for i in range(300)]
    assert len({w.scenario_id for w in worlds}) == 300
    assert len({w.ref_ids[0] for w in worlds}) >= 295
    assert all(re.fullmatch(r"ORD-\d{4,5}", w.ref_ids[0]) for w in worlds)


def test_one_tool_gives_over_100k_distinct_prompts():   # per-write cost: the bench's micro lines
    writer = TemplateWriter(TOOLS, "", seed=3)
    prompts = set()
    n = 0
    for instance in range(1700):
        for cell in CELLS:
            prompts.add(writer.write(cell, instance).prompt)
            n += 1
    assert n >= 100_000 and len(prompts) >= 100_000


def test_tier_world_state_and_dims_follow_the_cell():
    for s in SAMPLE[:500]:
        assert s.tier == tier_of(s.dims["stance"])
        ws = s.dims["world_state"]
        assert s.world_state == (None if ws in ("unknown", "unspecified") else ws)


def test_ask_family_shares_and_wording():
    tool_cells = [s for s in SAMPLE if s.dims["tool"] == "lookup_order"]
    share = Counter(s.ask_family for s in tool_cells)
    assert abs(share["tool"] / len(tool_cells) - 0.8) < 0.05
    assert abs(share["vague"] / len(tool_cells) - 0.1) < 0.04
    for s in tool_cells:
        if s.ask_family != "tool" and s.tags.get("texture", "standard") == "standard":
            assert "check" not in _first_sentence(s.prompt).lower()   # the action is not named
        assert s.tool_known == (s.ask_family == "tool")


def test_ref_ids_are_in_the_prompt_and_the_reference():
    for s in SAMPLE:
        for rid in s.ref_ids:
            assert rid.lower() in s.prompt.lower()
        if s.ref_ids and s.dims["tool"] == "lookup_order":
            assert s.ref_ids[0] in s.reference


def test_reference_states_the_expected_outcome():
    missing = WRITER.write(_cell(world_state="entity missing"), 1)
    if missing.ask_family == "tool":
        assert f"The order {missing.ref_ids[0]} does not exist" in missing.reference
    for i in range(40):
        s = WRITER.write(_cell(world_state="entity missing", tool_condition="timeout"), i)
        assert "times out" in s.reference
        if s.ask_family == "tool":
            assert "does not exist; the agent should say so and not invent details" in s.reference
    unrelated = WRITER.write(_cell(tool="unrelated"), 3)
    assert unrelated.ref_ids == [] and "not call any tool" in unrelated.reference
    assert "order" not in unrelated.prompt.lower()
    adversarial = WRITER.write(_cell(stance="adversarial"), 3)
    assert adversarial.tier == "adversarial" and "refuse" in adversarial.reference


def test_multi_tool_asks_two_steps():
    one = WRITER.write(_cell(tool="multi_tool"), 4)
    assert len(one.ref_ids) == 2 and one.ask_family == "tool" and not one.tool_known
    two_tools = TOOLS + [{"name": "cancel_order", "parameters": {"properties": {"order_id": {}}}}]
    w = TemplateWriter(two_tools, "", seed=0)
    for i in range(20):
        s = w.write(_cell(tool="multi_tool"), i)
        text = s.prompt.lower()
        if "typo" in s.extra:
            text = text.replace(s.extra["typo"][1].lower(), s.extra["typo"][0].lower())
        assert "check" in text and "cancel" in text


def test_description_examples_give_the_id_format_not_its_value():
    # issue 29: "e.g. ORD-4017" says what an order id looks like; every ask naming ORD-4017 itself
    # would name a record the world does not hold
    tools = [{"name": "lookup_order", "description": "Look up an order, e.g. ORD-4017 or ORD-5120.",
              "parameters": {"properties": {"order_id": {"type": "string"}}}}]
    w = TemplateWriter(tools, "", seed=0)
    exists = {w.write(_cell(), i).ref_ids[0] for i in range(30)}
    assert len(exists) > 10 and all(re.fullmatch(r"ORD-\d{4}", i) for i in exists)
    missing = {w.write(_cell(world_state="entity missing"), i).ref_ids[0] for i in range(30)}
    assert all(re.fullmatch(r"ORD-\d{4}", i) for i in missing) and not missing & exists


def test_no_key_parameter_means_no_id():
    tools = [{"name": "get_weather", "parameters": {"properties": {"city": {"type": "string"}}}}]
    w = TemplateWriter(tools, "", seed=0)
    s = w.write(_cell(tool="get_weather", world_state="unspecified"), 1)
    assert s.ref_ids == [] and s.world_state is None and "weather" in s.prompt.lower()


def test_email_ids_never_lose_their_punctuation():
    tools = [{"name": "find_customer", "parameters": {"properties": {"email": {"type": "string"}}}}]
    w = TemplateWriter(tools, "", seed=0)
    for i in range(400):
        s = w.write(_cell(tool="find_customer"), i)
        assert s.tags.get("texture") != "no_punctuation"
        assert s.ref_ids[0].lower() in s.prompt.lower() and "@example.com" in s.ref_ids[0]


def test_policy_clause_is_worded_into_the_ask():
    w = TemplateWriter(TOOLS, "Never cancel an order that has shipped.", seed=0)
    s = w.write(_cell(rule="Never cancel an order that has shipped."), 2)
    assert "never cancel an order that has shipped" in s.prompt.lower().replace("  ", " ")


# ---- realized tags ----------------------------------------------------------------------
def test_tags_only_take_known_values():
    allowed = {
        "texture": {"standard", "lowercase", "abbreviations", "typo", "no_punctuation", "run_on", "clipped"},
        "length": {"short prompt", "medium prompt", "long prompt"},
        "tone": set(tb.TONE), "ask": {"question", "ask", "several asks", "do several things"},
        "vagueness": {"specific", "vague", "underspecified"},
        "phrasing": {"incomplete", "specific", "rambling"},
        "pressure": {"rushed", "insistent", "repeat"},
        "user": {"first time", "returning", "in a hurry", "careful", "brief"},
    }
    for s in SAMPLE:
        for k, v in s.tags.items():
            if k in ("stance", "history"):
                assert v == s.dims[k]
            else:
                assert v in allowed[k], (k, v)
    share = Counter(s.tags.get("texture", "none") for s in SAMPLE)
    assert 0.2 < sum(share[t] for t in allowed["texture"] - {"standard"}) / len(SAMPLE) < 0.36


def test_texture_lowercase_has_no_capitals():
    for s in _tagged("texture", "lowercase", None):
        assert s.prompt == s.prompt.lower()


def test_texture_no_punctuation_has_none():
    for s in _tagged("texture", "no_punctuation", None):
        assert not set(".,!?;:") & set(s.prompt)


def test_texture_typo_misspells_a_word():
    for s in _tagged("texture", "typo", None):
        word, bad = s.extra["typo"]
        assert bad != word and sorted(bad) == sorted(word)
        assert re.search(rf"(?<![A-Za-z]){re.escape(bad)}(?![A-Za-z])", s.prompt)


def test_texture_abbreviations_shows_abbreviations():
    abbrevs = set(tb.ABBREVIATIONS.values())
    for s in _tagged("texture", "abbreviations", None):
        tokens = {t.strip(".,!?;:") for t in s.prompt.split()} | set(s.prompt.split())
        assert tokens & abbrevs


def test_texture_run_on_has_one_sentence_end():
    for s in _tagged("texture", "run_on", None):
        assert len(re.findall(r"[.!?]+(?:\s|$)", s.prompt)) <= 1


def test_texture_clipped_drops_articles_and_pronouns():
    for s in _tagged("texture", "clipped", None):
        words = {w.strip(".,!?;:").lower() for w in s.prompt.split()}
        assert not words & tb.CLIPPED_DROP


def test_length_tags_change_how_much_is_said():
    mean = {}
    for length in ("short prompt", "medium prompt", "long prompt"):
        rows = _tagged("length", length)
        mean[length] = sum(len(s.prompt.split()) for s in rows) / len(rows)
    assert mean["short prompt"] + 8 < mean["medium prompt"] < mean["long prompt"] - 8


@pytest.mark.parametrize("tone", sorted(tb.TONE))
def test_tone_has_its_marker(tone):
    for s in _tagged("tone", tone):
        assert any(m.rstrip(".!?") in s.prompt for m in tb.TONE[tone])


def test_ask_tags_shape_the_ask():
    for s in _tagged("ask", "question"):
        assert "?" in s.prompt
        if s.tool_known:
            assert _first_sentence(s.prompt).endswith("?")
    for s in _tagged("ask", "ask"):
        if s.tool_known:
            assert not _first_sentence(s.prompt).endswith("?")
    for s in _tagged("ask", "several asks"):
        assert any(q in s.prompt for q in tb.SECOND_QUESTIONS)
        if s.tool_known:
            assert s.prompt.count("?") >= 2
    for s in _tagged("ask", "do several things"):
        assert any(m.split("{")[0][:20] in s.prompt for m in tb.MORE_THINGS)


@pytest.mark.parametrize("key,value,markers", [
    ("user", "first time", tb.USER["first time"]), ("user", "careful", tb.USER["careful"]),
    ("pressure", "rushed", tb.PRESSURE["rushed"]), ("pressure", "insistent", tb.PRESSURE["insistent"]),
    ("pressure", "repeat", ("Again: ",)), ("vagueness", "vague", tb.VAGUE_HEDGE),
    ("vagueness", "underspecified", tb.UNDERSPECIFIED), ("vagueness", "specific", ("To be exact", "Exact details")),
    ("phrasing", "rambling", tb.RAMBLING), ("phrasing", "specific", ("To be exact", "Exact details")),
])
def test_rare_tags_have_their_markers(key, value, markers):
    for s in _tagged(key, value):
        assert any(m.rstrip(".!?") in s.prompt for m in markers), s.prompt


def test_incomplete_phrasing_trails_off_and_brief_user_is_short():
    for s in _tagged("phrasing", "incomplete"):
        assert s.prompt.endswith(tuple(tb.INCOMPLETE_TAIL))
    for s in _tagged("user", "brief"):
        assert s.tags["length"] == "short prompt"


def test_apply_texture_directly():
    sents = ["Can you check my order ORD-123?", "I really need it today.", "Thanks."]
    assert apply_texture(sents, "lowercase", lambda: 0.0)[0] == "can you check my order ord-123? i really need it today. thanks."
    assert apply_texture(sents, "run_on", lambda: 0.0)[0] == "Can you check my order ORD-123 and I really need it today and thanks."
    assert apply_texture(sents, "clipped", lambda: 0.0)[0] == "Check order ORD-123? Need it today."
    assert "pls" in apply_texture(["Please check it."], "abbreviations", lambda: 0.0)[0]


# ---- probes, seeds, mutations -------------------------------------------------------------
def test_probes_cover_all_families_and_stay_distinct():
    probes = [WRITER.probe(i) for i in range(3300)]
    assert {p.extra["family"] for p in probes} == set(FAMILIES)
    assert len({p.prompt for p in probes}) >= 0.99 * len(probes)
    for p in probes[:50]:
        assert p.dims == {} and p.arm == "open_ended" and p.writer_model == "template"
        assert re.fullmatch(r"probe_[0-9a-f]{6}", p.scenario_id)
        assert all(r in p.prompt for r in p.ref_ids)
    assert WRITER.probe(17).to_dict() == TemplateWriter(TOOLS, "", 0).probe(17).to_dict()
    injections = [p for p in probes if p.extra["family"] == "prompt_injection"]
    assert all(p.tier == "adversarial" for p in injections)


def test_seed_situation_is_verbatim():
    import hashlib
    text = "Where is my order ORD-5521? It was due Monday."
    s = WRITER.seed_situation(text, 0)
    assert s.prompt == text and s.writer_model == "seed" and s.arm == "open_ended"
    assert s.scenario_id == "probe_" + hashlib.sha256(text.encode()).hexdigest()[:6]
    assert s.tier == "ordinary" and s.dims == {}
    with pytest.raises(ValueError, match="seeds= entry 1 is empty"):
        WRITER.seed_situation("  ", 1)
    with pytest.raises(TypeError, match="seeds= takes prompt strings"):
        WRITER.seed_situation(5, 2)


def test_mutation_keeps_the_world_and_asks_anew():
    parent = WRITER.write(_cell(world_state="duplicate entity", stance="boundary"), 11)
    kids = [WRITER.mutate(parent, i) for i in range(10)]
    assert len({k.prompt for k in kids}) >= 8
    assert {k.extra["mutator"] for k in kids} == {"truncate", "narrow", "restate", "clarify", "strip_context"}
    for k in kids:
        assert k.arm == "failure_mutation" and k.parent_failure_id == parent.prompt[:80]
        assert (k.dims, k.world_state, k.ref_ids, k.tier) == (parent.dims, parent.world_state,
                                                               parent.ref_ids, parent.tier)
        assert k.prompt != parent.prompt and k.scenario_id != parent.scenario_id
    assert WRITER.mutate(parent, 3).to_dict() == TemplateWriter(TOOLS, "", 0).mutate(parent, 3).to_dict()
