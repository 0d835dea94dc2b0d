"""``sketch_many`` is ``novelty.sketch`` row for row (issue 32: a lane sketches its asks in batches):
texts of one word (no bigram) and of none (``"<empty>"``), before, between and after others,
unicode, repeats, long texts, batches past one chunk, and an empty batch."""
import numpy as np

from whileai_ray.search import sketch_batch
from whileai_ray.search.novelty import K, sketch
from whileai_ray.search.sketch_batch import sketch_many
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS


def _texts():
    odd = ["", "one", "!!!", "Refund ORD-1 now", "one", "a b", "漢字 🚀 \ud800 ORD-77", "x " * 400,
           "the the the the", "Two words", "$5 @home it's fine.", "word"]
    writer = TemplateWriter(TOOLS, SYSTEM, 3)
    from whileai_ray.situations.grid import build_axes, pairwise_cells
    cells = pairwise_cells(build_axes(TOOLS, SYSTEM, None))
    written = [writer.write(cells[i % len(cells)], i, i % 3).prompt for i in range(60)]
    return odd + written + odd[::-1]


def test_a_batch_of_sketches_is_each_texts_sketch():
    texts = _texts()
    want = np.stack([sketch(t) for t in texts])
    assert sketch_many(texts).dtype == np.uint32
    assert np.array_equal(sketch_many(texts), want)
    for i in range(len(texts)):                      # every text alone, and every stretch of two
        assert np.array_equal(sketch_many(texts[i:i + 1]), want[i:i + 1])
        assert np.array_equal(sketch_many(texts[i:i + 2]), want[i:i + 2])
    assert sketch_many([]).shape == (0, K)


def test_one_chunk_for_the_whole_batch_gives_the_same_sketches(monkeypatch):
    texts = _texts()
    monkeypatch.setattr(sketch_batch, "_CHUNK", 1000)
    assert np.array_equal(sketch_many(texts), np.stack([sketch(t) for t in texts]))
