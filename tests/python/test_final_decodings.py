"""Which test decoding is a run's result (analysis/sweep.py final_decoding): only one that scored
the parameters of the run's final evaluation."""

import types

from analysis.sweep import final_decoding


def run(checkpoint="newest", average_last=0, steps=800, best_step=600, decoded_average=0,
        **decoding):
    """A run whose final evaluation averaged `average_last` checkpoints, with an /eval_test that
    averaged `decoded_average` at `decoding["step"]`."""
    return types.SimpleNamespace(
        config={"eval.checkpoint": checkpoint, "eval.average_last": average_last},
        summary={"steps": float(steps), "best_step": float(best_step)},
        decodings={"eval_test": {"bleu": 20.0, "ppl": 9.0, "average_last": decoded_average,
                                 **decoding}})


def test_a_decoding_of_the_final_parameters_counts():
    assert final_decoding(run(step=800), "test")["bleu"] == 20.0
    assert final_decoding(run("best", step=600), "test")["ppl"] == 9.0
    assert final_decoding(run(average_last=3, decoded_average=3, step=800), "test")


def test_a_decoding_of_other_parameters_does_not():
    assert final_decoding(run(step=600), "test") is None, "an older checkpoint"
    assert final_decoding(run("best", step=800), "test") is None, "the newest, not the best"
    assert final_decoding(run(average_last=3, step=800), "test") is None, "not averaged"
    assert final_decoding(run(step=800), "dev") is None, "no such decoding"
    assert final_decoding(run(), "test") is None, "no step recorded"
