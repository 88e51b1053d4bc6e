"""Trivial baselines for a translation split, scored with `attnlab bleu` beside a model's score.

copy:    the hypothesis is the source sentence itself (shared names and numbers still match).
unigram: the hypothesis is the n most frequent target-side words of the training data, in order
         of frequency, n = the number of words in the source sentence (a unigram language model
         that ignores the source except for its length).

usage: python3 experiments/small/baselines.py --train-tgt data/bible/train.es \
           --src data/bible/test.en --out DIR
writes DIR/copy.txt and DIR/unigram.txt (score them with: attnlab bleu data/bible/test.es FILE).
"""

import argparse
import collections
import pathlib


def read_lines(path):
    return pathlib.Path(path).read_text(encoding="utf-8").splitlines()


def unigram_hypotheses(train_tgt, sources):
    counts = collections.Counter(word for line in train_tgt for word in line.split())
    # Ties broken by the word itself, so the output does not depend on dictionary order.
    ranked = [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    return [" ".join(ranked[:len(source.split())]) for source in sources]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-tgt", required=True, help="target side of the training data")
    parser.add_argument("--src", required=True, help="source side of the split to translate")
    parser.add_argument("--out", required=True, help="directory for copy.txt and unigram.txt")
    args = parser.parse_args()
    sources = read_lines(args.src)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "copy.txt").write_text("".join(line + "\n" for line in sources), encoding="utf-8")
    unigram = unigram_hypotheses(read_lines(args.train_tgt), sources)
    (out / "unigram.txt").write_text("".join(line + "\n" for line in unigram), encoding="utf-8")


if __name__ == "__main__":
    main()
