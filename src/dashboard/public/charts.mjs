/**
 * Live metric charts for one job, drawn with uPlot: one chart per metric group (see metric-groups.mjs),
 * x = step. Points arrive in batches from the event stream; a repeated (name, step) overwrites, so a
 * replayed stream after a reconnect draws the same chart. Redraws are batched to one per frame.
 */
import uPlot from './uplot.esm.js';
import { h, replace } from './dom.mjs';
import { metricValue } from './format.mjs';
import { groupMetrics } from './metric-groups.mjs';

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
const HEIGHT = 200;

/** A colour sample; set through the style object, which the page's CSP allows (style attributes it does not). */
function swatch(color) {
  const el = h('span', { class: 'legend-swatch', 'aria-hidden': 'true' });
  el.style.backgroundColor = color;
  return el;
}

export class MetricCharts {
  /** @param {HTMLElement} container where the chart figures go */
  constructor(container) {
    this.container = container;
    /** name → Map(step → value) */
    this.series = new Map();
    /** group id → chart record */
    this.charts = new Map();
    this.frame = 0;
    this.resizer = new ResizeObserver(() => this.resize());
    this.resizer.observe(container);
  }

  /** Adds metric points (`[{ step, name, value }]`). */
  add(points) {
    let newNames = false;
    for (const { step, name, value } of points) {
      if (!Number.isFinite(step) || typeof value !== 'number') continue;
      let values = this.series.get(name);
      if (!values) {
        values = new Map();
        this.series.set(name, values);
        newNames = true;
      }
      values.set(step, value);
    }
    if (newNames) this.layout();
    this.schedule();
  }

  /** Number of metric names seen. */
  get size() {
    return this.series.size;
  }

  destroy() {
    cancelAnimationFrame(this.frame);
    this.resizer.disconnect();
    for (const chart of this.charts.values()) chart.plot?.destroy();
    this.charts.clear();
  }

  /** Makes one figure per group, reusing charts whose members did not change. */
  layout() {
    const groups = groupMetrics([...this.series.keys()]);
    const keep = new Set();
    for (const group of groups) {
      const existing = this.charts.get(group.id);
      if (existing && existing.names.join('\n') === group.names.join('\n')) {
        keep.add(group.id);
        continue;
      }
      existing?.plot?.destroy();
      existing?.figure.remove();
      this.charts.set(group.id, this.makeChart(group));
      keep.add(group.id);
    }
    for (const [id, chart] of this.charts) {
      if (!keep.has(id)) {
        chart.plot?.destroy();
        chart.figure.remove();
        this.charts.delete(id);
      }
    }
    const figures = groups.map((g) => this.charts.get(g.id).figure);
    // Move figures only when the order is wrong, so a focused legend button keeps its focus.
    figures.forEach((figure, i) => {
      if (this.container.children[i] !== figure) this.container.insertBefore(figure, this.container.children[i] ?? null);
    });
  }

  makeChart(group) {
    const plotBox = h('div', { class: 'chart-plot', role: 'img', 'aria-label': `${group.title} by step` });
    const summary = h('span', { class: 'chart-summary' });
    const legend = h('ul', { class: 'chart-legend', 'aria-label': `${group.title} series` });
    const figure = h('figure', { class: 'chart', dataset: { group: group.id, points: '0' } }, h('figcaption', {}, h('h3', {}, group.title), summary), plotBox, legend);
    const chart = { id: group.id, names: group.names, figure, plotBox, summary, legend, plot: null, items: [] };
    chart.items = group.names.map((name, i) => {
      const value = h('span', { class: 'legend-value' }, '—');
      const button = h(
        'button',
        {
          type: 'button',
          class: 'legend-item',
          'aria-pressed': 'true',
          title: 'Show or hide this series',
          onclick: () => {
            const show = button.getAttribute('aria-pressed') !== 'true';
            button.setAttribute('aria-pressed', String(show));
            chart.plot?.setSeries(i + 1, { show });
          },
        },
        swatch(PALETTE[i % PALETTE.length]),
        h('span', { class: 'legend-name' }, name),
        value,
      );
      legend.append(h('li', {}, button));
      return { name, value };
    });
    return chart;
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      for (const chart of this.charts.values()) this.draw(chart);
    });
  }

  draw(chart) {
    const steps = new Set();
    for (const name of chart.names) for (const step of this.series.get(name)?.keys() ?? []) steps.add(step);
    const x = [...steps].sort((a, b) => a - b);
    const ys = chart.names.map((name) => {
      const values = this.series.get(name);
      return x.map((step) => (values.has(step) ? values.get(step) : null));
    });
    const data = [x, ...ys];
    if (!chart.plot) chart.plot = new uPlot(this.options(chart), data, chart.plotBox);
    else chart.plot.setData(data);
    chart.figure.dataset.points = String(x.length);
    const last = x.at(-1);
    replace(chart.summary, last === undefined ? 'no points yet' : `step ${last} · ${x.length} point${x.length === 1 ? '' : 's'}`);
    chart.items.forEach((item, i) => {
      const series = ys[i];
      let latest = null;
      for (let j = series.length - 1; j >= 0; j--) {
        if (series[j] !== null) {
          latest = series[j];
          break;
        }
      }
      item.value.textContent = latest === null ? '—' : metricValue(latest);
    });
  }

  options(chart) {
    const style = getComputedStyle(this.container);
    const axis = style.getPropertyValue('--chart-axis').trim() || '#555';
    const grid = style.getPropertyValue('--chart-grid').trim() || '#ddd';
    const axisStyle = { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    return {
      width: this.widthOf(chart),
      height: HEIGHT,
      legend: { show: false },
      scales: { x: { time: false } },
      axes: [
        { ...axisStyle, label: 'step', labelSize: 20 },
        { ...axisStyle, size: 60, values: (_, ticks) => ticks.map(metricValue) },
      ],
      series: [{ label: 'step' }, ...chart.names.map((name, i) => ({ label: name, stroke: PALETTE[i % PALETTE.length], width: 2, spanGaps: true }))],
    };
  }

  widthOf(chart) {
    return Math.max(200, Math.floor(chart.plotBox.clientWidth || this.container.clientWidth || 600));
  }

  resize() {
    for (const chart of this.charts.values()) {
      if (!chart.plot) continue;
      const width = this.widthOf(chart);
      if (width !== chart.plot.width) chart.plot.setSize({ width, height: HEIGHT });
    }
  }
}
