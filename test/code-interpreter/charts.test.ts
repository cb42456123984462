// matplotlib figures come back as a png plus chart data (type, title, labels, units, ticks, scales, elements).
import { describe, expect, it } from "vitest";
import { useInterpreter } from "./helpers.js";

const shared = useInterpreter();

const PNG_BASE64 = /^iVBORw0KGgo/;

// The chart types are a union in the SDK; tests read fields by name.
type AnyChart = Record<string, any>;

async function onlyChart(code: string): Promise<{ chart: AnyChart; png: string | undefined; text: string | undefined }> {
  const execution = await shared.sandbox.runCode(code);
  expect(execution.error).toBeUndefined();
  expect(execution.results).toHaveLength(1);
  const [result] = execution.results;
  expect(result?.isMainResult).toBe(false);
  return { chart: result?.chart as AnyChart, png: result?.png, text: result?.text };
}

describe("charts", () => {
  it("a bar chart", async () => {
    const { chart, png, text } = await onlyChart(`
import matplotlib.pyplot as plt
authors = ['Author A', 'Author B', 'Author C', 'Author D']
sales = [100, 200, 300, 400]
plt.figure(figsize=(10, 6))
plt.bar(authors, sales)
plt.xlabel('Authors')
plt.ylabel('Number of Books Sold')
plt.title('Book Sales by Authors')
plt.tight_layout()
plt.show()
`);
    expect(png).toMatch(PNG_BASE64);
    expect(text).toContain("Figure");
    expect(chart.type).toBe("bar");
    expect(chart.title).toBe("Book Sales by Authors");
    expect(chart.x_label).toBe("Authors");
    expect(chart.y_label).toBe("Number of Books Sold");
    expect(chart.x_unit).toBeNull();
    expect(chart.elements.map((e: AnyChart) => e.label)).toEqual(["Author A", "Author B", "Author C", "Author D"]);
    expect(chart.elements.map((e: AnyChart) => e.value)).toEqual([100, 200, 300, 400]);
  });

  it("a line chart with units, ticks and scales", async () => {
    const { chart, png } = await onlyChart(`
import numpy as np
import matplotlib.pyplot as plt
x = np.linspace(0, 2 * np.pi, 100)
plt.figure(figsize=(10, 6))
plt.plot(x, np.sin(x), label='sin(x)')
plt.plot(x, np.cos(x), label='cos(x)')
plt.xlabel("Time (s)")
plt.ylabel("Amplitude (Hz)")
plt.title('Plot of sin(x) and cos(x)')
plt.show()
`);
    expect(png).toMatch(PNG_BASE64);
    expect(chart.type).toBe("line");
    expect(chart.title).toBe("Plot of sin(x) and cos(x)");
    expect([chart.x_label, chart.y_label, chart.x_unit, chart.y_unit]).toEqual(["Time (s)", "Amplitude (Hz)", "s", "Hz"]);
    expect([chart.x_scale, chart.y_scale]).toEqual(["linear", "linear"]);
    expect(chart.x_ticks.length).toBeGreaterThan(2);
    expect(chart.x_ticks.every((t: unknown) => typeof t === "number")).toBe(true);
    expect(chart.x_tick_labels.every((t: unknown) => typeof t === "string")).toBe(true);
    expect(chart.elements.map((e: AnyChart) => e.label)).toEqual(["sin(x)", "cos(x)"]);
    expect(chart.elements[0].points).toHaveLength(100);
    expect(chart.elements[0].points[0]).toEqual([0, 0]);
    expect(chart.elements[1].points[0]).toEqual([0, 1]);
  });

  it("a figure with two subplots is a superchart", async () => {
    const { chart } = await onlyChart(`
import matplotlib.pyplot as plt
import numpy as np
x1 = np.linspace(0, 10, 100)
fig, axs = plt.subplots(1, 2, figsize=(10, 8))
fig.suptitle('Multiple Charts Example', fontsize=16)
axs[0].plot(x1, np.sin(x1), 'r')
axs[0].set_title('Sine Wave')
axs[0].grid(True)
axs[1].scatter(np.random.rand(5), np.random.rand(5), c='blue', label='Dataset 1')
axs[1].set_xlabel('X')
axs[1].set_ylabel('Y')
axs[1].set_title('Scatter Plot')
axs[1].grid(True)
plt.show()
`);
    expect(chart.type).toBe("superchart");
    expect(chart.title).toBe("Multiple Charts Example");
    expect(chart.elements).toHaveLength(2);
    const [line, scatter] = chart.elements;
    expect([line.type, line.title, line.x_label]).toEqual(["line", "Sine Wave", null]);
    expect(line.elements[0].points).toHaveLength(100);
    expect([scatter.type, scatter.title, scatter.x_label, scatter.y_label]).toEqual(["scatter", "Scatter Plot", "X", "Y"]);
    expect(scatter.elements[0].label).toBe("Dataset 1");
    expect(scatter.elements[0].points).toHaveLength(5);
  });

  it("pie and box-and-whisker charts", async () => {
    const pie = await onlyChart(`
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(8, 8))
ax.pie([90, 10], labels=["No", "No, in blue"], startangle=90)
plt.title('Will I wake up early tomorrow?')
plt.show()
`);
    expect(pie.chart.type).toBe("pie");
    expect(pie.chart.elements).toEqual([
      { label: "No", angle: 324, radius: 1 },
      { label: "No, in blue", angle: 36, radius: 1 },
    ]);
    const box = await onlyChart(`
import matplotlib.pyplot as plt
data = {'Class A': [85, 90, 78, 92, 88], 'Class B': [95, 89, 76, 91, 84, 87], 'Class C': [75, 82, 88, 79, 86]}
fig, ax = plt.subplots(figsize=(10, 6))
ax.set_title('Exam Scores Distribution')
ax.set_xlabel('Class')
ax.set_ylabel('Score')
ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)
plt.show()
`);
    expect(box.chart.type).toBe("box_and_whisker");
    expect(box.chart.elements.map((e: AnyChart) => [e.label, e.min, e.first_quartile, e.median, e.third_quartile, e.max, e.outliers])).toEqual([
      ["Class A", 78, 85, 88, 90, 92, []],
      ["Class B", 84, 84.75, 88, 90.5, 95, [76]],
      ["Class C", 75, 79, 82, 86, 88, []],
    ]);
  });
});
