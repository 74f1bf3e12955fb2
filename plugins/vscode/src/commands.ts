// SPDX-License-Identifier: MIT
// The commands: launch the job in the editor (debug on one node, submit distributed, debug one rank under
// gdb), stop, attach, follow a stored run, and the views' own (output, chart, refresh, reconnect).

import * as vscode from 'vscode';
import {
  BridgeClient,
  firstFailedRank,
  isTerminal,
  Logger,
  Mode,
  RpcError,
  RunStore,
  RunTracker,
} from './client';
import { DebugLauncher } from './views/debugLauncher';
import { DiagnosisReporter } from './views/diagnostics';
import { LossChartPanel } from './views/lossChart';
import { RankOutputs } from './views/rankOutputs';
import { RankNode, RunNode, RunTreeProvider, TreeNode } from './views/runTree';
import { RunStatusBar } from './views/statusBar';

export interface CommandDeps {
  client: BridgeClient;
  tracker: RunTracker;
  store: RunStore;
  tree: RunTreeProvider;
  treeView: vscode.TreeView<TreeNode>;
  outputs: RankOutputs;
  statusBar: RunStatusBar;
  chart: LossChartPanel;
  debugLauncher: DebugLauncher;
  logger: Logger;
}

export class Commands {
  private reporter: DiagnosisReporter | undefined;
  private readonly announcedEnd = new Set<string>();

  constructor(private readonly d: CommandDeps) {}

  setReporter(reporter: DiagnosisReporter): void {
    this.reporter = reporter;
  }

  register(): vscode.Disposable[] {
    const reg = (id: string, fn: (...args: never[]) => unknown): vscode.Disposable =>
      vscode.commands.registerCommand(id, async (...args: never[]) => {
        try {
          await fn(...args);
        } catch (err) {
          void vscode.window.showErrorMessage(`RankScope: ${describe(err)}`);
        }
      });
    return [
      reg('rankscope.debugJob', () => this.launch('debug')),
      reg('rankscope.submitJob', () => this.launch('submit')),
      reg('rankscope.debugRank', () => this.debugRank()),
      reg('rankscope.stop', (node?: RunNode) => this.stop(node)),
      reg('rankscope.attach', (node?: RunNode) => this.attach(node)),
      reg('rankscope.follow', (node?: RunNode) => this.follow(node?.run)),
      reg('rankscope.showLossChart', (node?: TreeNode) => this.showChart(node?.run)),
      reg('rankscope.showRankOutput', (node?: RankNode) => this.d.outputs.show(node?.rank)),
      reg('rankscope.showMergedOutput', () => this.d.outputs.show()),
      reg('rankscope.refresh', () => this.refresh(true)),
      reg('rankscope.reconnect', () => this.reconnect()),
    ];
  }

  /** Runs.list into the tree; `loud` reports a failure to the user. */
  async refresh(loud: boolean): Promise<void> {
    try {
      this.d.tree.setListed(await this.d.client.listRuns());
    } catch (err) {
      if (loud) throw err;
      this.d.logger.warn(`runs.list: ${describe(err)}`);
    }
  }

  reveal(run: string): void {
    this.d.statusBar.focus(run);
    void this.d.treeView.reveal({ kind: 'run', run }, { select: true, focus: true, expand: true }).then(undefined, () => undefined);
  }

  onRunFinished(run: string): void {
    void this.refresh(false);
    const record = this.d.store.get(run)?.record;
    if (!record || this.announcedEnd.has(run) || !this.d.tree.isFollowed(run)) return;
    this.announcedEnd.add(run);
    const failed = record.state === 'failed' || record.state === 'lost';
    const firstFailed = firstFailedRank(record);
    const message = `RankScope: run ${record.name || run} ${record.state}${
      firstFailed !== undefined ? ` (first failed rank: ${firstFailed})` : ''
    }`;
    if (failed) {
      const action = firstFailed !== undefined ? `Show rank ${firstFailed} output` : 'Show output';
      void vscode.window.showErrorMessage(message, action).then((choice) => {
        if (choice) this.d.outputs.show(firstFailed);
      });
    } else {
      void vscode.window.setStatusBarMessage(message, 10_000);
    }
  }

  private async launch(mode: Mode, debugRank?: number): Promise<void> {
    const document = vscode.window.activeTextEditor?.document;
    if (!document || (document.languageId !== 'json' && document.languageId !== 'jsonc')) {
      throw new Error('open a job file (JSON) in the editor first, e.g. resources/jobs/local-debug.json');
    }
    const job = await jobParameter(document);
    this.reporter?.clearJobIssues(document.uri);
    const what = debugRank === undefined ? mode : `debug, rank ${debugRank} under gdb`;
    let run: string;
    try {
      ({ run } = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `RankScope: launching ${jobName(document)} (${what})…` },
        () => this.d.client.launch(debugRank === undefined ? { job, mode } : { job, mode, debug_rank: debugRank }),
      ));
    } catch (err) {
      if (err instanceof RpcError && err.issues.length > 0) {
        this.reporter?.showJobIssues(document, err.issues);
        const choice = await vscode.window.showErrorMessage(
          `RankScope: the job has ${err.issues.length} problem${err.issues.length === 1 ? '' : 's'}: ${err.issues[0]?.path}: ${err.issues[0]?.message}`,
          'Show Problems',
        );
        if (choice) await vscode.commands.executeCommand('workbench.actions.view.problems');
        return;
      }
      throw err;
    }
    this.d.logger.info(`launched run ${run} (${what})`);
    // Asked for: the rank is debugged as soon as it waits, whether run.debugReady or the snapshot says so first.
    if (debugRank !== undefined) this.d.debugLauncher.expect(run);
    // The bridge subscribed this client with the launch (no notification is missed); following fetches the
    // run's snapshot and puts it in the tree.
    await this.follow(run);
    this.d.outputs.show();
    this.d.chart.show(run);
  }

  private async debugRank(): Promise<void> {
    const answer = await vscode.window.showInputBox({
      title: 'RankScope: Debug one rank under gdb',
      prompt: 'The rank to run under gdbserver (the job runs in debug mode on one node; the other ranks run normally)',
      value: '0',
      validateInput: (v) => (/^\d+$/.test(v.trim()) ? undefined : 'a rank: 0, 1, 2, …'),
    });
    if (answer === undefined) return;
    await this.launch('debug', Number(answer.trim()));
  }

  private async stop(node?: RunNode): Promise<void> {
    const run = node?.run ?? (await this.pickRun('Stop which run?', (id) => this.isLive(id)));
    if (!run) return;
    const result = await this.d.client.stop(run);
    this.d.logger.info(`stopping run ${result.run}`);
    void vscode.window.setStatusBarMessage(`RankScope: stopping run ${run}…`, 5_000);
  }

  private async attach(node?: RunNode): Promise<void> {
    let run = node?.run;
    if (!run) {
      const runs = (await this.d.client.listRuns()).filter((r) => !isTerminal(r.state));
      if (runs.length === 0) {
        void vscode.window.showInformationMessage('RankScope: no stored run is still running.');
        return;
      }
      const pick = await vscode.window.showQuickPick(
        runs.map((r) => ({ label: r.name || r.id, description: `${r.state} · ${r.mode} · ${r.world_size} ranks`, detail: r.id, id: r.id })),
        { title: 'RankScope: attach to a run' },
      );
      if (!pick) return;
      run = pick.id;
    }
    // A run this bridge already follows is only subscribed to; any other is followed from its nodes again.
    // A rank of it waiting under gdbserver comes with the snapshot (its `debug`), and is offered.
    await this.d.client.attach(run);
    await this.follow(run);
    this.d.outputs.show();
  }

  /** Subscribes to a live run; a finished one is fetched once (state and the tail of its logs). */
  private async follow(run: string | undefined): Promise<void> {
    run ??= await this.pickRun('Follow which run?', () => true);
    if (!run) return;
    if (isTerminal(this.d.tree.record(run)?.state)) {
      await this.d.tracker.refresh(run);
    } else {
      await this.d.tracker.follow(run);
      this.d.tree.setFollowed(run, true);
    }
    this.reveal(run);
  }

  private showChart(run: string | undefined): void {
    run ??= this.d.statusBar.focusedRun ?? this.d.client.subscribedRuns.at(-1);
    if (!run) {
      void vscode.window.showInformationMessage('RankScope: follow or launch a run first.');
      return;
    }
    this.d.chart.show(run);
  }

  private async reconnect(): Promise<void> {
    const hello = await this.d.client.connect();
    void vscode.window.setStatusBarMessage(`RankScope: connected to ${hello.server} ${hello.server_version}`, 5_000);
    await this.refresh(true);
  }

  private isLive(run: string): boolean {
    return this.d.tree.isFollowed(run) && !isTerminal(this.d.tree.record(run)?.state);
  }

  private async pickRun(title: string, filter: (run: string) => boolean): Promise<string | undefined> {
    const ids = this.d.tree.runIds().filter(filter);
    if (ids.length === 0) {
      void vscode.window.showInformationMessage('RankScope: no such run.');
      return undefined;
    }
    if (ids.length === 1) return ids[0];
    const pick = await vscode.window.showQuickPick(
      ids.map((id) => {
        const r = this.d.tree.record(id);
        return { label: r?.name || id, description: r ? `${r.state} · ${r.mode}` : '', detail: id, id };
      }),
      { title: `RankScope: ${title}` },
    );
    return pick?.id;
  }
}

/** The job as the bridge takes it: the file's path when it is saved on disk (saved first), else its JSON. */
async function jobParameter(document: vscode.TextDocument): Promise<unknown> {
  if (document.uri.scheme === 'file' && !document.isUntitled) {
    if (document.isDirty && !(await document.save())) throw new Error('the job file could not be saved');
    return document.uri.fsPath;
  }
  try {
    return JSON.parse(document.getText()) as unknown;
  } catch (err) {
    throw new Error(`the job is not valid JSON: ${(err as Error).message}`);
  }
}

function jobName(document: vscode.TextDocument): string {
  return document.isUntitled ? 'job' : (document.uri.path.split('/').pop() ?? 'job');
}

function describe(err: unknown): string {
  if (err instanceof RpcError) return err.describe();
  return err instanceof Error ? err.message : String(err);
}
