"""Whether a run's decoder reads its source: decoder-encoder attention over the dev set.

A run measures, at its end, the entropy of every decoder-encoder attention row over its whole
dev set relative to the uniform entropy log(source length), averaged over layers, heads and
target positions (/summary dev_cross_attention_entropy); `attnlab eval --split dev` records the
same (/eval_dev). 1 is uniform attention, which hands every target position the mean of the
source: a decoder at 1 is a language model of the target side that ignores the input.
"""

from analysis.runfile import final_parameters

# At or above this fraction of the uniform entropy a decoder is said to ignore its source. Every
# run of the CPU-scale Table 3 that learned to translate ends between 0.53 and 0.74; the Post-LN
# rows that stalled (docs/results/table3-plateau-notes.md) end at 0.98 to 1.00, with dev BLEU
# near 2 where the others reach 9 to 19.
IGNORES_SOURCE = 0.95


def dev_cross_attention(data):
    """/summary dev_cross_attention_entropy of a run. Runs logged before the run measured it may
    carry it from `attnlab eval --split dev` (/eval_dev), used when that scored the parameters of
    the run's final evaluation (the same step, not an average). Else None."""
    value = data.summary.get("dev_cross_attention_entropy")
    if value is not None:
        return float(value)
    decoding = getattr(data, "decodings", {}).get("eval_dev", {})
    final = final_parameters(data.summary, getattr(data, "path", "run.h5"))
    if ("cross_attention_entropy" in decoding and final is not None and final[0] != "average"
            and int(decoding.get("average_last", 0)) <= 1
            and int(decoding.get("step", -1)) == final[1]):
        return float(decoding["cross_attention_entropy"])
    return None
