// SPDX-License-Identifier: MIT
// The live loss chart: a webview running Chart.js (from the extension's own node_modules, under a strict
// Content-Security-Policy), one line per rank. New points are sent as batches at most every 250 ms; the
// webview asks for the whole series when it (re)loads.

import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { RunChange, RunStore } from '../client';

const FLUSH_MS = 250;

/** A rank's points as sent to the webview; null stands for a non-finite loss (JSON has no NaN). */
type Points = [number, number | null][];

interface SeriesMessage {
  rank: number;
  points: Points;
}

export class LossChartPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private run: string | undefined;
  private pending = new Map<number, Points>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: RunStore,
  ) {
    this.subs.push(new vscode.Disposable(store.onDidChange((c) => this.onChange(c)).dispose));
  }

  get shownRun(): string | undefined {
    return this.panel ? this.run : undefined;
  }

  show(run: string): void {
    const changed = run !== this.run;
    this.run = run;
    if (!this.panel) {
      this.panel = this.createPanel();
    } else {
      this.panel.reveal(undefined, true);
      if (changed) this.sendReset();
    }
    this.panel.title = `Loss: ${this.title()}`;
  }

  dispose(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.panel?.dispose();
    for (const s of this.subs) s.dispose();
  }

  private createPanel(): vscode.WebviewPanel {
    const chartDir = vscode.Uri.joinPath(this.extensionUri, 'node_modules', 'chart.js', 'dist');
    const mediaDir = vscode.Uri.joinPath(this.extensionUri, 'media');
    const panel = vscode.window.createWebviewPanel(
      'rankscope.lossChart',
      'Loss',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: [chartDir, mediaDir] },
    );
    const webview = panel.webview;
    const nonce = crypto.randomBytes(16).toString('base64');
    const chartJs = webview.asWebviewUri(vscode.Uri.joinPath(chartDir, 'chart.umd.js'));
    const script = webview.asWebviewUri(vscode.Uri.joinPath(mediaDir, 'lossChart.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(mediaDir, 'lossChart.css'));
    const csp = [
      "default-src 'none'",
      `img-src ${webview.cspSource} data:`,
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    webview.html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Loss</title>
</head>
<body>
<div id="header"><span id="title"></span><span id="status"></span></div>
<div id="chart-box"><canvas id="chart"></canvas></div>
<script nonce="${nonce}" src="${chartJs.toString()}"></script>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
    webview.onDidReceiveMessage((m: { type?: string }) => {
      if (m.type === 'ready') this.sendReset();
    });
    panel.onDidDispose(() => {
      this.panel = undefined;
      this.pending.clear();
    });
    return panel;
  }

  private title(): string {
    if (!this.run) return '';
    const record = this.store.get(this.run)?.record;
    return record?.name ? `${record.name} (${this.run})` : this.run;
  }

  private sendReset(): void {
    if (!this.panel || !this.run) return;
    this.pending.clear();
    const view = this.store.get(this.run);
    const series: SeriesMessage[] = [];
    for (const [rank, s] of [...(view?.losses ?? new Map())].sort((a, b) => a[0] - b[0])) {
      series.push({ rank, points: s.steps.map((step: number, i: number) => [step, finiteOrNull(s.losses[i])]) });
    }
    void this.panel.webview.postMessage({ type: 'reset', title: this.title(), state: view?.record?.state ?? '', series });
  }

  private onChange(change: RunChange): void {
    if (!this.panel || change.run !== this.run) return;
    for (const [rank, added] of change.newLoss) {
      let points = this.pending.get(rank);
      if (!points) {
        points = [];
        this.pending.set(rank, points);
      }
      for (let i = 0; i < added.steps.length; i++) points.push([added.steps[i] as number, finiteOrNull(added.losses[i])]);
    }
    if (change.kinds.has('record') || change.kinds.has('finished') || this.pending.size > 0) this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      if (!this.panel || !this.run) return;
      const series: SeriesMessage[] = [...this.pending].map(([rank, points]) => ({ rank, points }));
      this.pending.clear();
      const state = this.store.get(this.run)?.record?.state ?? '';
      void this.panel.webview.postMessage({ type: 'append', title: this.title(), state, series });
    }, FLUSH_MS);
  }
}

function finiteOrNull(value: number | undefined): number | null {
  return value !== undefined && Number.isFinite(value) ? value : null;
}
