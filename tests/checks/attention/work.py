"""Signs of real work: what a check asks besides its own property when a function that does
nothing would pass that property alone.

A shape, a dtype, an input left alone, an output that ignores the future: a function that
returns zeros, a constant, noise or its input unchanged has all of these. A check of such a
property also asks, on the same example, for a sign that the function did its job. Each sign
is weak on purpose (every realistic mistake in tests/catalog/ shows it, so partial credit stays
partial credit) and follows from what the exercise promises, so the right answer always shows it.
"""

from __future__ import annotations

import numpy as np

from grader import expect

from .spec import future

#: Checks whose property, sign included, a function that does no work can still have: outputs
#: that ignore the other tokens, other sequences or the order of the heads (noise seeded by each
#: token's own numbers, or the same noise for every call of one shape, has them), a shape and a
#: zero output for zero tokens (noise as large as each token). Each pays only if its exercise
#: passes one of its other checks (the grader's rule: ``_gated`` in grader/engine/collector.py).
#: The other checks' signs already rule noise out (tests/catalog/attention/trivial/).
WEAK_CHECKS = {
    "split_heads": ("changing_a_token_changes_only_its_slices",),
    "mha_forward": (
        "output_and_weight_shapes",
        "later_tokens_do_not_change_earlier_outputs",
        "each_row_behaves_as_if_given_only_its_prefix",
        "batch_elements_are_independent",
        "renumbering_the_heads_changes_nothing",
    ),
}


def mask_at_work(got: np.ndarray, scores: np.ndarray, *, name: str) -> None:
    """A mask lets some scores through untouched and hides others.

    On two tokens or more, some score on or left of the diagonal must come back exactly as it
    went in; on three or more, some score must not (a mask that is off by one still hides
    something from the first token there). Scores are never 0 or another round number (see
    strategies.score_tables), so writing such a number never counts as keeping a score.
    """
    tokens = scores.shape[-1]
    kept = got == scores  # (..., T, T)
    if tokens >= 2:
        allowed = np.broadcast_to(~future(tokens), scores.shape)
        expect.that(
            bool(np.any(kept & allowed)),
            f"{name} keeps none of the scores a token may see (on or left of the diagonal): "
            "a mask only hides the later keys and gives every other score back as it was.",
        )
    if tokens >= 3:
        expect.that(
            not bool(np.all(kept)),
            f"{name} gives every score back unchanged on {tokens} tokens: nothing is hidden. "
            "Every score of a later key (column j > row i) must become -inf.",
        )


def holds_the_numbers_of(got: np.ndarray, x: np.ndarray, *, name: str, of: str) -> None:
    """Cutting into heads or joining them only moves numbers: the result holds exactly the
    numbers of its input, each once (checked once the shape is known to be right)."""
    expect.equal(
        np.sort(got, axis=None),
        np.sort(x, axis=None),
        name=f"the sorted numbers of {name}",
        what=f"differ from those of {of} (the heads must be made of its numbers, each used once)",
    )


def layer_at_work(out: np.ndarray, layer, *, name: str) -> None:
    """The output of mha_forward comes from the layer: it is finite, it is not x handed back,
    and it is not one number repeated everywhere.

    Each demand is made only where the right answer with the mask cannot break it: its first
    token's output is ``x[0] @ W_v @ W_o``, so x handed back is wrong unless that is x[0], and
    one number everywhere is wrong unless that is one number repeated. (Without the mask the
    same demands hold unless the weights conspire to cancel exactly.)
    """
    first = layer.x[..., 0, :] @ layer.W_v @ layer.W_o  # (..., D) the first token's output
    expect.that(
        bool(np.all(np.isfinite(out))),
        f"{name} holds inf or nan although every input is finite and of moderate size.",
    )
    if not np.array_equal(first, layer.x[..., 0, :]):
        expect.that(
            not np.array_equal(out, layer.x),
            f"{name} is x itself: the tokens come back unchanged. The output must be computed "
            "from the tokens' values (x @ W_v), blended by the weights and mixed by W_o.",
        )
    if np.any(first != first.flat[0]):
        expect.that(
            bool(np.any(out != out.flat[0])),
            f"{name} is {expect.fmt(out.flat[0])} everywhere, whatever the tokens: it cannot be, "
            "since the first token's output alone, x[0] @ W_v @ W_o, is not one number repeated.",
        )
