// SPDX-License-Identifier: MIT
// The loss chart webview: one Chart.js line per rank, loss by global step. The extension sends
// {type: 'reset'|'append', title, state, series: [{rank, points: [[step, loss|null], ...]}]}.
/* global Chart, acquireVsCodeApi */
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const css = getComputedStyle(document.body);
  const fg = css.getPropertyValue('--vscode-foreground').trim() || '#ccc';
  const grid = css.getPropertyValue('--vscode-editorWidget-border').trim() || 'rgba(128,128,128,0.25)';
  const palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

  const chart = new Chart(document.getElementById('chart'), {
    type: 'line',
    data: { datasets: [] },
    options: {
      animation: false,
      parsing: false,
      normalized: true,
      spanGaps: false,
      maintainAspectRatio: false,
      interaction: { mode: 'nearest', axis: 'x', intersect: false },
      elements: { point: { radius: 0, hitRadius: 4 }, line: { borderWidth: 1.5 } },
      scales: {
        x: { type: 'linear', title: { display: true, text: 'step', color: fg }, ticks: { color: fg }, grid: { color: grid } },
        y: { title: { display: true, text: 'loss', color: fg }, ticks: { color: fg }, grid: { color: grid } },
      },
      plugins: {
        legend: { labels: { color: fg } },
        decimation: { enabled: true, algorithm: 'lttb', samples: 1000 },
        tooltip: { callbacks: { title: (items) => (items.length ? 'step ' + items[0].parsed.x : '') } },
      },
    },
  });

  const byRank = new Map();

  function dataset(rank) {
    let ds = byRank.get(rank);
    if (!ds) {
      const color = palette[rank % palette.length];
      ds = { label: 'rank ' + rank, data: [], borderColor: color, backgroundColor: color, rank: rank, points: [] };
      byRank.set(rank, ds);
      chart.data.datasets.push(ds);
      chart.data.datasets.sort((a, b) => a.rank - b.rank);
    }
    return ds;
  }

  function add(series) {
    for (const s of series) {
      const ds = dataset(s.rank);
      for (const [x, y] of s.points) ds.points.push({ x: x, y: y === null ? NaN : y });
      // Once decimated, ds.data reads the decimated copy; assigning hands the plugin the full series.
      ds.data = ds.points;
    }
  }

  function header(message) {
    document.getElementById('title').textContent = message.title || '';
    document.getElementById('status').textContent = message.state ? ' · ' + message.state : '';
  }

  window.addEventListener('message', (event) => {
    const message = event.data;
    if (message.type === 'reset') {
      byRank.clear();
      chart.data.datasets = [];
      add(message.series);
    } else if (message.type === 'append') {
      add(message.series);
    } else {
      return;
    }
    header(message);
    chart.update('none');
  });

  vscode.postMessage({ type: 'ready' });
})();
