#!/bin/sh
# The tournaments behind the figures in services/ai/README.md, in priority order.
# Usage: sh benchmarks/ai_tournaments.sh   (writes benchmarks/results/*.json)
set -e
out=benchmarks/results
t() { battleline tournament --workers 2 --seed 1 "$@"; }
for r in standard basic deck52; do
  t --a heuristic --b random --games 200 --ruleset $r --json $out/heuristic_vs_random_$r.json
done
t --a ismcts:level=2 --b ismcts:level=1 --games 200 --json $out/level2_vs_level1.json
t --a ismcts:level=3 --b ismcts:level=2 --games ${G32:-100} --json $out/level3_vs_level2.json
t --a ismcts:level=5 --b heuristic --games ${G5H:-100} --json $out/level5_vs_heuristic.json
t --a ismcts:level=4 --b ismcts:level=3 --games ${G43:-60} --json $out/level4_vs_level3.json
t --a ismcts:level=5 --b ismcts:level=4 --games ${G54:-40} --json $out/level5_vs_level4.json
t --a ismcts:level=5 --b random --games ${G5R:-40} --json $out/level5_vs_random.json
