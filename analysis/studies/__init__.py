"""The seed-note studies of experiments/studies/ and their page, docs/results/studies.md:
`python3 -m analysis.studies runs/studies [--run] [--page docs/results/studies.md]`.

One module per study, each going from the sweep's run files to a table, its figures and its
section of the page (`table`, `figures`/`figure`, `section(sweep, out_dir, page)`):

    sqrt_dk           1. why divide by sqrt(d_k): logit variance, entropy, query/key gradients
    warmup_norm       2. warmup and Post-LN vs Pre-LN: divergence, final loss, layer gradients
    positions_length  3. positions beyond the training length: BLEU and perplexity per bucket
    heads             4. one head vs several: per-head entropy, probe attention maps

common holds what several studies use (running attnlab, completed runs, the SentencePiece
tokenizer of a run, number and table formatting); cli the command line, --run and the page's
header. Thresholds that choose a sentence are named constants of the study's module, and the
page states them.
"""
