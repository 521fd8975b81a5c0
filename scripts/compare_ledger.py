"""Compare two claims ledgers (folders of ``*.claims.json`` / ``*.json`` page records) claim by claim.

    python scripts/compare_ledger.py OLD_DIR NEW_DIR [--page focus_dilution/condensation] [--rtol 1e-12]

Claims are matched by (page, id, what) in order of appearance; the per-seed part of a ``what``
(``(per seed [...])``) is left out of the key and compared as a value. Prints every claim whose
verdict changed, whose measured value moved by more than ``rtol`` (relative), and every claim that
exists on one side only. Exit status 1 when anything differs (the regression oracle of issue 22).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path


def load(folder: Path) -> dict[str, list[dict]]:
    pages: dict[str, list[dict]] = {}
    for f in sorted(Path(folder).rglob("*.json")):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "claims" in data and "page" in data:
            pages[data["page"]] = data["claims"]
    return pages


def key_of(rec: dict) -> tuple[str, str]:
    what = re.sub(r" \(per seed \[.*?\]\)", "", rec.get("what", ""))
    return rec["id"], what


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def differs(a, b, rtol: float) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return a != b
        return any(differs(x, y, rtol) for x, y in zip(a, b))
    fa, fb = num(a), num(b)
    if fa is None or fb is None:
        return a != b
    if math.isnan(fa) and math.isnan(fb):
        return False
    return abs(fa - fb) > rtol * max(abs(fa), abs(fb), 1e-300) and fa != fb


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--page", action="append", default=None)
    ap.add_argument("--rtol", type=float, default=1e-12)
    a = ap.parse_args(argv)
    old, new = load(a.old), load(a.new)
    pages = sorted(set(old) | set(new)) if not a.page else a.page
    n_diff = 0
    for page in pages:
        o, n = old.get(page), new.get(page)
        if o is None or n is None:
            print(f"{page}: only in {'new' if o is None else 'old'}")
            n_diff += 1
            continue
        bucket_o, bucket_n = defaultdict(list), defaultdict(list)
        for r in o:
            bucket_o[key_of(r)].append(r)
        for r in n:
            bucket_n[key_of(r)].append(r)
        lines = []
        for k in list(dict.fromkeys([*bucket_o, *bucket_n])):
            ro, rn = bucket_o.get(k, []), bucket_n.get(k, [])
            for i in range(max(len(ro), len(rn))):
                x = ro[i] if i < len(ro) else None
                y = rn[i] if i < len(rn) else None
                tag = f"{k[0]} {k[1][:90]}"
                if x is None or y is None:
                    lines.append(f"  {'+' if x is None else '-'} {tag}: {(y or x)['verdict']} {(y or x)['measured']}")
                    continue
                if x["verdict"] != y["verdict"]:
                    lines.append(
                        f"  ~ {tag}: verdict {x['verdict']} -> {y['verdict']} "
                        f"(measured {x['measured']} -> {y['measured']})"
                    )
                elif differs(x["measured"], y["measured"], a.rtol):
                    lines.append(f"  ~ {tag}: measured {x['measured']} -> {y['measured']} ({x['verdict']})")
        print(
            f"{page}: {len(o)} old, {len(n)} new claims; {len(lines)} differences" + ("" if lines else " (identical)")
        )
        print("\n".join(lines)) if lines else None
        n_diff += len(lines)
    return 1 if n_diff else 0


if __name__ == "__main__":
    sys.exit(main())
