# Stage 2, clean: drop rows whose reading is missing, not a number, or outside -60..60 °C.
import csv, os, sys

src = sys.argv[1] if len(sys.argv) > 1 else "/home/user/data/raw.csv"
out = sys.argv[2] if len(sys.argv) > 2 else "/home/user/data/clean.csv"
kept, dropped = [], 0
with open(src, newline="") as f:
    for row in csv.DictReader(f):
        try:
            c = float(row["celsius"])
        except ValueError:
            dropped += 1
            continue
        if not -60.0 <= c <= 60.0:
            dropped += 1
            continue
        kept.append({"day": int(row["day"]), "city": row["city"], "celsius": f"{c:.2f}"})

os.makedirs(os.path.dirname(out), exist_ok=True)
tmp = os.path.join(os.path.dirname(out), ".clean.tmp")
with open(tmp, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["day", "city", "celsius"])
    w.writeheader()
    w.writerows(kept)
os.replace(tmp, out)
print(f"clean: kept {len(kept)}, dropped {dropped} -> {out}")
