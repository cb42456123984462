# Stage 3, analyze: per-city count, mean, min and max of the clean readings, as JSON.
import csv, json, os, sys

src = sys.argv[1] if len(sys.argv) > 1 else "/home/user/data/clean.csv"
out = sys.argv[2] if len(sys.argv) > 2 else "/home/user/data/stats.json"
by_city = {}
with open(src, newline="") as f:
    for row in csv.DictReader(f):
        by_city.setdefault(row["city"], []).append(float(row["celsius"]))

stats = {
    city: {"count": len(v), "mean": round(sum(v) / len(v), 2), "min": min(v), "max": max(v)}
    for city, v in sorted(by_city.items())
}
tmp = os.path.join(os.path.dirname(out), ".analyze.tmp")
with open(tmp, "w") as f:
    json.dump(stats, f, indent=2, sort_keys=True)
os.replace(tmp, out)
print(f"analyze: {len(stats)} cities -> {out}")
