"""Resampling and interval statistics shared by the commands: paired bootstrap comparisons, block lengths, score
intervals of proportions, baselines."""
