"""What a smaller cuda screening budget (``cuda.search_budget_s``) would have cost a finished
dense search, replayed from its own rows (issue 39, criterion 5: search + final_libs of a
40-65 GEMM trace in <= 180 s):

    python bench/search_budget.py SEARCH_DATA_DIR [--budgets 0.5,1,2,3,5] [--json FILE]

SEARCH_DATA_DIR holds the campaign's ``search/data/*.csv``, whose rows say when each candidate
was screened (``screen_s``). A budget B keeps the candidates screened by B seconds, and the
heuristic's list whatever B (the search always screens it; rows without ``screen_s`` are
taken as kept). Per GEMM, the winner under B is the fastest eligible ``final`` row among those
kept, else the default: the real run's side-by-side times, so a candidate that became a
finalist only under B (it had only a quick screening time) is not counted, and a lower budget
is never credited with a pick the real run did not time. Prints per budget how many GEMMs
keep their winner, the sum of the winners' us against the full budget's, and the screening
seconds saved (the GEMM's last screen_s above B, summed)."""
import argparse
import json
from pathlib import Path

import pandas as pd

KEY = ["transA", "transB", "m", "n", "k", "batch_count", "a_type", "compute_type"]


def gemm_key(rows: pd.DataFrame) -> list[str]:
    """The columns of KEY the rows have: what tells one GEMM's rows from another's."""
    return [c for c in KEY if c in rows.columns]


def rows_of(directory: Path) -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in sorted(directory.glob("*.csv*"))]  # .csv.gz too
    if not frames:
        raise SystemExit(f"no search rows (*.csv) in {directory}")
    return pd.concat(frames, ignore_index=True)


def winner_us(group: pd.DataFrame, budget: float) -> float:
    """The fastest eligible final row screened by ``budget`` (or never screened: the default,
    the heuristic's list), as the real run timed it."""
    final = group[(group["stage"] == "final") & group["eligible"].astype(bool)]
    kept = final[final["screen_s"].isna() | (final["screen_s"] <= budget)
                 | final["heuristic"]]
    return float(kept["us"].min())


def replay(rows: pd.DataFrame, budgets: list[float], heuristic_count: int) -> list[dict]:
    rows = rows.copy()
    rows["heuristic"] = False
    key = gemm_key(rows)
    out = []
    groups = list(rows.groupby(key, sort=False))
    for _, group in groups:  # the heuristic's list comes first: the earliest screen_s
        first = group["screen_s"].dropna().nsmallest(heuristic_count).index
        rows.loc[first, "heuristic"] = True
    groups = list(rows.groupby(key, sort=False))
    full = {name: winner_us(g, float("inf")) for name, g in groups}
    for budget in budgets:
        same = total = base = saved = 0.0
        for name, group in groups:
            us = winner_us(group, budget)
            same += us <= full[name] * (1 + 1e-9)
            total += us
            base += full[name]
            last = group["screen_s"].max()
            saved += max(0.0, float(last) - budget) if pd.notna(last) else 0.0
        out.append({"budget_s": budget, "gemms": len(groups), "same_winner": int(same),
                    "winners_us": round(total, 3), "vs_full_budget": round(total / base, 5),
                    "screening_s_saved": round(saved, 1)})
    return out


def winners_found_at(rows: pd.DataFrame) -> pd.Series:
    """Per GEMM, when its screening reached the full budget's winner (screen_s; NaN where the
    default won, which is not screened)."""
    final = rows[(rows["stage"] == "final") & rows["eligible"].astype(bool)]
    return final.loc[final.groupby(gemm_key(rows), sort=False)["us"].idxmin(), "screen_s"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--budgets", default="0.5,1,2,3,5")
    parser.add_argument("--heuristic-count", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = rows_of(args.directory)
    if "screen_s" not in rows.columns:
        raise SystemExit(f"{args.directory}: the rows have no screen_s column (a search from "
                         f"before it was recorded)")
    result = replay(rows, [float(b) for b in args.budgets.split(",")], args.heuristic_count)
    for r in result:
        print(f"budget {r['budget_s']:g} s: {r['same_winner']}/{r['gemms']} GEMMs keep their "
              f"winner; winners {r['vs_full_budget']:.4f}x the full budget's time; "
              f"{r['screening_s_saved']:.0f} s of screening saved")
    found = winners_found_at(rows).dropna()
    if len(found):
        print(f"the winners came up by {found.max():.2f} s of their screening "
              f"(90% by {found.quantile(0.9):.2f} s); the screenings ran "
              f"{rows.groupby(gemm_key(rows))['screen_s'].max().median():.2f} s (median)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
