"""Print the hyperfine results of bench/run.sh as one table: medians and the ratio hands/reference."""

import json
import sys
from pathlib import Path


def main() -> None:
    results = Path(sys.argv[1])
    print(f"{'benchmark':<14} {'command':<8} {'median':>10} {'stddev':>9} {'hands/ref':>10}")
    print("-" * 55)
    for name in sys.argv[2:]:
        data = json.loads((results / f"{name}.json").read_text())["results"]
        medians = {r["command"]: r["median"] for r in data}
        hands = medians.get("hands")
        for r in data:
            ratio = ""
            if r["command"] != "hands" and hands is not None and r["median"] > 0:
                ratio = f"{hands / r['median']:.2f}x"
            print(
                f"{name:<14} {r['command']:<8} {r['median'] * 1000:>8.1f}ms "
                f"{(r['stddev'] or 0) * 1000:>7.1f}ms {ratio:>10}"
            )
    print("\nratio = hands median / reference median (targets: grep <= 1.15x rg, glob <= 1.5x rg --files)")


if __name__ == "__main__":
    main()
