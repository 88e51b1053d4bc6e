"""Which test decoding is a run's result (analysis/sweep.py final_decoding): only one that scored
the parameters of the run's final evaluation; and a completed run whose eval.decode_splits are
not all decoded at those parameters is not done (analysis/runfile.py pending_splits)."""

import types

from analysis.runfile import pending_splits
from analysis.sweep import LoadStatus, _mark_undecoded, final_decoding


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


def completed(checkpoint="newest", splits=("dev", "test"), **decoded_steps):
    """A completed run whose eval.decode_splits are `splits`, with /eval_<split> at the steps
    given (steps 800, best_step 600)."""
    return types.SimpleNamespace(
        status="completed",
        config={"eval.checkpoint": checkpoint, "eval.decode_splits": list(splits)},
        summary={"steps": 800.0, "best_step": 600.0},
        decodings={f"eval_{split}": {"step": step} for split, step in decoded_steps.items()})


def test_pending_splits_are_those_not_decoded_at_the_final_parameters():
    assert pending_splits(completed()) == ["dev", "test"], "stopped before decoding"
    assert pending_splits(completed(dev=800, test=600)) == ["test"], "test of older parameters"
    assert pending_splits(completed(dev=800, test=800)) == []
    assert pending_splits(completed("best", dev=600, test=800)) == ["test"], "best is step 600"
    assert pending_splits(completed(splits=())) == [], "nothing to decode"
    unfinished = completed()
    unfinished.status = "running"
    assert pending_splits(unfinished) == [], "training has not completed"


def test_an_undecoded_run_is_left_out_with_a_note():
    record, notes = {"name": "base.seed1", "run_id": "abc", "status": "completed"}, []
    _mark_undecoded(record, completed(dev=800), notes)
    assert record["status"] == LoadStatus.UNDECODED.value == "undecoded"
    assert notes == ["training completed but test not decoded (training the run again decodes "
                     "them), left out of every mean: base.seed1 (id abc)"]
    record, notes = {"name": "base.seed1", "run_id": "abc", "status": "completed"}, []
    _mark_undecoded(record, completed(dev=800, test=800), notes)
    assert record["status"] == "completed" and notes == []
