# Stage 1, collect: "sensor readings" from a seeded generator, some of them broken (missing, non-numeric, absurd),
# written to raw.csv atomically (temp file + rename, so watchers see one create when the file is complete).
import csv, os, random, sys

out = sys.argv[1] if len(sys.argv) > 1 else "/home/user/data/raw.csv"
rng = random.Random(42)
cities = {"Lisbon": 18.0, "Oslo": 6.0, "Cairo": 27.0, "Lima": 19.0, "Perth": 22.0}
rows = []
for day in range(1, 31):
    for city, base in cities.items():
        value = f"{base + rng.uniform(-4, 4):.2f}"
        roll = rng.random()
        if roll < 0.05:
            value = ""  # sensor offline
        elif roll < 0.08:
            value = "ERR"  # garbled
        elif roll < 0.10:
            value = "999.0"  # stuck sensor
        rows.append({"day": day, "city": city, "celsius": value})

os.makedirs(os.path.dirname(out), exist_ok=True)
tmp = os.path.join(os.path.dirname(out), ".collect.tmp")
with open(tmp, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["day", "city", "celsius"])
    w.writeheader()
    w.writerows(rows)
os.replace(tmp, out)
print(f"collect: {len(rows)} rows -> {out}")
