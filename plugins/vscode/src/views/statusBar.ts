// SPDX-License-Identifier: MIT
// The status-bar item: the focused run's progress and loss, or the bridge connection's state.

import * as vscode from 'vscode';
import { ClientState, isTerminal, RunStore } from '../client';
import { formatLoss, formatPercent } from './format';

export class RunStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private focused: string | undefined;
  private connection: ClientState = 'idle';

  constructor(private readonly store: RunStore) {
    this.item = vscode.window.createStatusBarItem('rankscope.status', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'RankScope';
    this.update();
  }

  focus(run: string | undefined): void {
    this.focused = run;
    this.update();
  }

  get focusedRun(): string | undefined {
    return this.focused;
  }

  setConnectionState(state: ClientState): void {
    this.connection = state;
    this.update();
  }

  update(): void {
    const view = this.focused ? this.store.get(this.focused) : undefined;
    if (!this.focused || !view) {
      this.showConnection();
      return;
    }
    const state = view.record?.state ?? 'launching';
    const progress = this.store.progress(this.focused);
    const parts: string[] = [];
    if (progress) {
      parts.push(progress.totalSteps ? `${progress.step}/${progress.totalSteps}` : `step ${progress.step}`);
      if (progress.fraction !== undefined) parts.push(formatPercent(progress.fraction));
      if (progress.meanLoss !== undefined) parts.push(`loss ${formatLoss(progress.meanLoss)}`);
    }
    const icon = isTerminal(view.record?.state)
      ? state === 'finished'
        ? '$(pass)'
        : '$(error)'
      : this.connection === 'connected'
        ? '$(sync~spin)'
        : '$(debug-disconnect)';
    this.item.text = `${icon} ${view.record?.name ?? 'RankScope'}: ${parts.length > 0 ? parts.join(' · ') : state}`;
    const tooltip = new vscode.MarkdownString(`**RankScope** run \`${this.focused}\`: ${state}`);
    for (const [host, message] of view.progress) tooltip.appendMarkdown(`\n\n${host}: ${message}`);
    if (this.connection !== 'connected') tooltip.appendMarkdown(`\n\nbridge: ${this.connection}`);
    tooltip.appendMarkdown('\n\nClick for the loss chart.');
    this.item.tooltip = tooltip;
    this.item.command = { command: 'rankscope.showLossChart', title: 'Show loss chart', arguments: [{ kind: 'run', run: this.focused }] };
    this.item.backgroundColor =
      state === 'failed' || state === 'lost' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }

  private showConnection(): void {
    if (this.connection === 'idle') {
      this.item.hide();
      return;
    }
    const text: Record<ClientState, string> = {
      idle: '',
      connecting: '$(loading~spin) RankScope: connecting',
      connected: '$(plug) RankScope',
      reconnecting: '$(debug-disconnect) RankScope: reconnecting',
      disposed: '',
    };
    this.item.text = text[this.connection];
    this.item.tooltip = `RankScope bridge: ${this.connection}`;
    this.item.command = 'rankscope.reconnect';
    this.item.backgroundColor =
      this.connection === 'reconnecting' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }
}
