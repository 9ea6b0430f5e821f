#!/bin/sh
# The tournaments behind the figures in services/ai/README.md, in the order they were run.
# Usage: sh benchmarks/ai_tournaments.sh   (writes benchmarks/results/*.json)
# Game counts are what fitted in the time on 2 shared cores; raise them for tighter intervals.
set -e
out=benchmarks/results
t() { battleline tournament --workers 2 --seed 1 "$@"; }
for r in standard basic deck52; do
  t --a heuristic --b random --games 200 --ruleset $r --json $out/heuristic_vs_random_$r.json
done
t --a ismcts:level=5 --b heuristic --games 100 --json $out/level5_vs_heuristic.json
t --a ismcts:level=4 --b ismcts:level=3 --games 60 --json $out/level4_vs_level3.json
t --a ismcts:level=5 --b ismcts:level=4 --games 40 --json $out/level5_vs_level4.json
t --a ismcts:level=5 --b random --games 40 --json $out/level5_vs_random.json
t --a ismcts:level=2 --b ismcts:level=1 --games 200 --json $out/level2_vs_level1.json
t --a ismcts:level=3 --b ismcts:level=2 --games 200 --json $out/level3_vs_level2.json
# Second batches on other deals (seed 1001), to tighten the two closest intervals.
battleline tournament --a ismcts:level=5 --b heuristic --games 100 --seed 1001 --workers 1 \
  --json $out/level5_vs_heuristic_seed1001.json
battleline tournament --a ismcts:level=4 --b ismcts:level=3 --games 60 --seed 1001 --workers 2 \
  --json $out/level4_vs_level3_seed1001.json
# Beyond level 5: does a bigger budget help?
battleline tournament --a ismcts:iterations=1000 --b heuristic --games 40 --seed 2001 --workers 2 \
  --json $out/ismcts1000_vs_heuristic.json
