// Charts through the vendored Chart.js (loaded before this module as a classic script).

// Okabe and Ito's colour-blind-safe palette, less its sky blue and yellow, then a brown and a
// grey: each at 3:1 or more on white, as WCAG 1.4.11 asks of a graphic's parts.
export const COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#8C510A"];
/** What is not one of the series above (usage not split by operation): 5.7:1 on white. */
export const GREY = "#666666";

/** Draws a chart on ``canvas``, replacing the one already there. */
export function draw(canvas, type, labels, datasets, { stacked = false, yTitle = "" } = {}) {
  const Chart = window.Chart;
  Chart.defaults.color = "#4a4a4a"; // axis and legend text at 8.9:1 on white
  Chart.getChart(canvas)?.destroy();
  return new Chart(canvas, {
    type,
    data: {
      labels,
      datasets: datasets.map((dataset, index) => ({
        backgroundColor: COLOURS[index % COLOURS.length],
        borderColor: COLOURS[index % COLOURS.length],
        pointRadius: 0,
        borderWidth: type === "line" ? 2 : 0,
        ...dataset,
      })),
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      plugins: { legend: { position: "bottom" } },
      scales: {
        x: { stacked, ticks: { maxRotation: 0, autoSkip: true } },
        y: { stacked, beginAtZero: true, title: { display: Boolean(yTitle), text: yTitle } },
      },
    },
  });
}

/** Forgets the chart on ``canvas``, if any. */
export function clear(canvas) {
  window.Chart.getChart(canvas)?.destroy();
}
