"""The shared vocabulary of the library and the CLI: names and defaults, result types, errors and their exit
codes, labels, parameter checks and bounds, seeds, inert text, gates."""
