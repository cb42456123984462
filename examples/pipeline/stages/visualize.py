# Stage 4, visualize: an SVG bar chart of each city's mean (with its min-max range), drawn by hand with the
# standard library only (the base template has python3 but no plotting libraries).
import json, os, sys
from xml.sax.saxutils import escape

src = sys.argv[1] if len(sys.argv) > 1 else "/home/user/data/stats.json"
out = sys.argv[2] if len(sys.argv) > 2 else "/home/user/data/chart.svg"
with open(src) as f:
    stats = json.load(f)

W, H, PAD, TOP = 640, 360, 50, 40
cities = sorted(stats)
hi = max(s["max"] for s in stats.values())
lo = min(0.0, min(s["min"] for s in stats.values()))
scale = (H - TOP - PAD) / (hi - lo)
y = lambda v: H - PAD - (v - lo) * scale
slot = (W - 2 * PAD) / len(cities)
parts = [
    f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
    '<rect width="100%" height="100%" fill="white"/>',
    f'<text x="{W / 2}" y="24" text-anchor="middle" font-family="sans-serif" font-size="16">Mean temperature by city (°C)</text>',
    f'<line x1="{PAD}" y1="{y(lo):.1f}" x2="{W - PAD}" y2="{y(lo):.1f}" stroke="black"/>',
]
for i, city in enumerate(cities):
    s = stats[city]
    x = PAD + i * slot + slot * 0.2
    w = slot * 0.6
    parts.append(
        f'<rect class="bar" data-city="{escape(city)}" data-mean="{s["mean"]}" x="{x:.1f}" y="{y(s["mean"]):.1f}" '
        f'width="{w:.1f}" height="{y(lo) - y(s["mean"]):.1f}" fill="steelblue"/>'
    )
    parts.append(
        f'<line x1="{x + w / 2:.1f}" y1="{y(s["min"]):.1f}" x2="{x + w / 2:.1f}" y2="{y(s["max"]):.1f}" stroke="#444" stroke-width="2"/>'
    )
    parts.append(f'<text x="{x + w / 2:.1f}" y="{y(s["max"]) - 6:.1f}" text-anchor="middle" font-family="sans-serif" font-size="12">{s["mean"]:.2f}</text>')
    parts.append(f'<text x="{x + w / 2:.1f}" y="{H - PAD + 18}" text-anchor="middle" font-family="sans-serif" font-size="12">{escape(city)}</text>')
parts.append("</svg>")

tmp = os.path.join(os.path.dirname(out), ".visualize.tmp")
with open(tmp, "w") as f:
    f.write("\n".join(parts) + "\n")
os.replace(tmp, out)
print(f"visualize: {len(cities)} bars -> {out}")
