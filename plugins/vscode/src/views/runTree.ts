// SPDX-License-Identifier: MIT
// The Runs view: stored runs (runs.list) and the runs followed live, each with its ranks and their state.
// Live updates are coalesced: at most one tree refresh every 250 ms.

import * as vscode from 'vscode';

import {firstFailedRank, headline, isTerminal, known, RankView, RunRecord, RunStore} from '../client';

import {formatLoss} from './format';

export type RunNode = { kind: 'run'; run: string };
export type RankNode = { kind: 'rank'; run: string; rank: number };
export type TreeNode = RunNode | RankNode;

const MAX_RUNS_SHOWN = 50;
const REFRESH_MS = 250;

export class RunTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private listed: RunRecord[] = [];
  private readonly followed = new Set<string>();
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly runNodes = new Map<string, RunNode>();
  private readonly rankNodes = new Map<string, RankNode>();

  constructor(private readonly store: RunStore) {}

  /** The stored runs as runs.list returned them, newest first. */
  setListed(runs: RunRecord[]): void {
    this.listed = runs;
    this.scheduleRefresh();
  }

  setFollowed(run: string, followed: boolean): void {
    if (followed) this.followed.add(run);
    else this.followed.delete(run);
    this.scheduleRefresh();
  }

  isFollowed(run: string): boolean {
    return this.followed.has(run);
  }

  record(run: string): RunRecord | undefined {
    return this.store.get(run)?.record ?? this.listed.find((r) => r.id === run);
  }

  /** Runs shown at the top level: followed ones first, then the stored ones. */
  runIds(): string[] {
    const ids = [...this.followed].reverse();
    for (const r of this.listed) if (!this.followed.has(r.id)) ids.push(r.id);
    return ids.slice(0, MAX_RUNS_SHOWN);
  }

  scheduleRefresh(): void {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      this.changeEmitter.fire(undefined);
    }, REFRESH_MS);
  }

  getChildren(element?: TreeNode): TreeNode[] {
    if (!element) return this.runIds().map((run) => this.runNode(run));
    if (element.kind === 'rank') return [];
    const view = this.store.get(element.run);
    const ranks = view ? [...view.ranks.keys()].sort((a, b) => a - b) : [];
    return ranks.map((rank) => this.rankNode(element.run, rank));
  }

  getParent(element: TreeNode): TreeNode | undefined {
    return element.kind === 'rank' ? this.runNode(element.run) : undefined;
  }

  getTreeItem(element: TreeNode): vscode.TreeItem {
    return element.kind === 'run' ? this.runItem(element.run) : this.rankItem(element.run, element.rank);
  }

  dispose(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.changeEmitter.dispose();
  }

  private runNode(run: string): RunNode {
    let node = this.runNodes.get(run);
    if (!node) {
      node = { kind: 'run', run };
      this.runNodes.set(run, node);
    }
    return node;
  }

  private rankNode(run: string, rank: number): RankNode {
    const key = `${run}/${rank}`;
    let node = this.rankNodes.get(key);
    if (!node) {
      node = { kind: 'rank', run, rank };
      this.rankNodes.set(key, node);
    }
    return node;
  }

  private runItem(run: string): vscode.TreeItem {
    const record = this.record(run);
    const view = this.store.get(run);
    const followed = this.followed.has(run);
    const hasRanks = (view?.ranks.size ?? 0) > 0;
    const item = new vscode.TreeItem(
      record?.name || run,
      hasRanks ? (followed ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed) : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `run:${run}`;
    const state = record?.state ?? 'launching';
    const parts: string[] = [state];
    const progress = this.store.progress(run);
    if (progress && !isTerminal(record?.state)) {
      parts.push(progress.totalSteps ? `step ${progress.step}/${progress.totalSteps}` : `step ${progress.step}`);
      if (progress.meanLoss !== undefined) parts.push(`loss ${formatLoss(progress.meanLoss)}`);
    }
    if (view?.stale) parts.push('catching up');
    parts.push(run);
    item.description = parts.join(' · ');
    item.iconPath = runIcon(state, followed);
    item.contextValue = `run.${followed && !isTerminal(record?.state) ? 'active' : 'stored'}.${state}`;
    const tooltip = new vscode.MarkdownString();
    tooltip.appendMarkdown(`**${record?.name ?? run}** \`${run}\`\n\n`);
    if (record) {
      tooltip.appendMarkdown(`${record.mode} · ${record.world_size} ranks · ${record.state} · created ${record.created}`);
      const ended = known(record.ended); // "" while the run goes on
      if (ended) tooltip.appendMarkdown(` · ended ${ended}`);
      const failed = firstFailedRank(record);
      if (failed !== undefined) tooltip.appendMarkdown(`\n\nfirst failed rank: ${failed}`);
      const summary = headline(record); // the whole verdict of an ended run, else its summary, once there is one
      if (summary) tooltip.appendMarkdown('\n\n').appendText(summary);
    }
    for (const [host, message] of view?.progress ?? []) tooltip.appendMarkdown(`\n\n${host}: ${message}`);
    item.tooltip = tooltip;
    if (!followed) item.command = { command: 'rankscope.follow', title: 'Follow run', arguments: [this.runNode(run)] };
    return item;
  }

  private rankItem(run: string, rank: number): vscode.TreeItem {
    const r = this.store.get(run)?.ranks.get(rank) ?? ({ rank } as RankView);
    const item = new vscode.TreeItem(`rank ${rank}`, vscode.TreeItemCollapsibleState.None);
    item.id = `rank:${run}/${rank}`;
    const parts: string[] = [r.state ?? 'starting'];
    if (r.host) parts.push(r.host);
    if (r.step !== undefined) parts.push(r.totalSteps ? `step ${r.step}/${r.totalSteps}` : `step ${r.step}`);
    if (r.loss !== undefined) parts.push(`loss ${formatLoss(r.loss)}`);
    if (r.exitStatus !== undefined && r.exitStatus !== 0) parts.push(`exit ${r.exitStatus}`);
    item.description = parts.join(' · ');
    item.iconPath = rankIcon(r.state);
    item.contextValue = 'rank';
    const lines = [`rank ${rank}${r.host ? ` on ${r.host}` : ''}: ${r.state ?? 'starting'}`];
    if (r.phase) lines.push(`phase: ${r.phase}`);
    if (r.stepsPerSecond !== undefined) lines.push(`${r.stepsPerSecond.toFixed(2)} steps/s`);
    if (r.imagesPerSec !== undefined) lines.push(`${r.imagesPerSec.toFixed(0)} images/s`);
    if (r.reason) lines.push(`reason: ${r.reason}`);
    if (r.lastError) lines.push(`${r.lastError.kind} error: ${r.lastError.message}`);
    item.tooltip = lines.join('\n');
    item.command = { command: 'rankscope.showRankOutput', title: 'Show rank output', arguments: [this.rankNode(run, rank)] };
    return item;
  }
}

function runIcon(state: string, followed: boolean): vscode.ThemeIcon {
  switch (state) {
    case 'launching':
      return new vscode.ThemeIcon('loading~spin');
    case 'running':
      return new vscode.ThemeIcon(followed ? 'sync~spin' : 'play-circle', new vscode.ThemeColor('charts.blue'));
    case 'finished':
      return new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
    case 'failed':
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
    case 'stopped':
      return new vscode.ThemeIcon('debug-stop');
    case 'lost':
      return new vscode.ThemeIcon('question', new vscode.ThemeColor('charts.orange'));
    default:
      return new vscode.ThemeIcon('circle-outline');
  }
}

function rankIcon(state: string | undefined): vscode.ThemeIcon {
  switch (state) {
    case 'running':
      return new vscode.ThemeIcon('circle-filled', new vscode.ThemeColor('charts.blue'));
    case 'slow':
      return new vscode.ThemeIcon('watch', new vscode.ThemeColor('charts.yellow'));
    case 'diverged':
        return new vscode.ThemeIcon('git-compare', new vscode.ThemeColor('charts.purple'));
    case 'hung':
      return new vscode.ThemeIcon('debug-pause', new vscode.ThemeColor('charts.orange'));
    case 'failed':
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
    case 'lost':
      return new vscode.ThemeIcon('question', new vscode.ThemeColor('charts.orange'));
    case 'finished':
      return new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
    case 'stopped':
      return new vscode.ThemeIcon('debug-stop');
    default:
      return new vscode.ThemeIcon('circle-outline');
  }
}
