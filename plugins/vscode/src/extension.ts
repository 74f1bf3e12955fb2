// SPDX-License-Identifier: MIT
// The extension's entry point: builds the bridge client (src/client, no VS Code in it) and the views over
// it, and registers the commands.

import { ChildProcess } from 'node:child_process';
import * as vscode from 'vscode';
import {
  BridgeClient,
  ConnectionFileError,
  ConnectionInfo,
  findBridge,
  Logger,
  runtimeDir,
  RunStore,
  RunTracker,
  startBridge,
} from './client';
import { Commands } from './commands';
import { DebugLauncher } from './views/debugLauncher';
import { DiagnosisReporter } from './views/diagnostics';
import { LossChartPanel } from './views/lossChart';
import { RankOutputs } from './views/rankOutputs';
import { RunTreeProvider } from './views/runTree';
import { RunStatusBar } from './views/statusBar';

let startedBridge: ChildProcess | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('RankScope', { log: true });
  const logger: Logger = { info: (m) => log.info(m), warn: (m) => log.warn(m) };
  const settings = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('rankscope');

  const client = new BridgeClient({
    locate: () => locate(settings(), logger),
    requestTimeoutMs: Math.max(1, settings().get<number>('requestTimeoutSeconds') ?? 30) * 1000,
    logger,
  });
  const store = new RunStore();
  const tracker = new RunTracker(client, store, logger);
  const tree = new RunTreeProvider(store);
  const treeView = vscode.window.createTreeView('rankscope.runs', { treeDataProvider: tree, showCollapseAll: true });
  const outputs = new RankOutputs((run, rank) => store.get(run)?.ranks.get(rank)?.host);
  const statusBar = new RunStatusBar(store);
  const chart = new LossChartPanel(context.extensionUri, store);
  const debugLauncher = new DebugLauncher(logger);
  const sourceDirs = new Set<string>();
  const commands = new Commands({ client, tracker, store, tree, treeView, outputs, statusBar, chart, debugLauncher, logger });
  const reporter = new DiagnosisReporter(
    store,
    { showRankOutput: (_run, rank) => outputs.show(rank), showRun: (run) => commands.reveal(run) },
    () => [...sourceDirs],
    () => settings().get<boolean>('showDiagnosisPopups') ?? true,
  );
  commands.setReporter(reporter);

  context.subscriptions.push(
    log,
    treeView,
    tree,
    outputs,
    statusBar,
    chart,
    reporter,
    toDisposable(() => tracker.dispose()),
    toDisposable(() => store.dispose()),
    toDisposable(() => client.dispose()),
    toDisposable(tracker.logs.onLines((batch) => outputs.append(batch))),
    toDisposable(
      // run.debugReady, or a snapshot's `debug` (a run attached to, or followed again): once each.
      tracker.onDebugReady((offer) => {
        if (offer.ready.source_dir) sourceDirs.add(offer.ready.source_dir);
        debugLauncher.handle(offer).catch((err: Error) => void vscode.window.showErrorMessage(`RankScope: ${err.message}`));
      }),
    ),
    toDisposable(
      store.onDidChange((change) => {
        tree.scheduleRefresh();
        if (change.run === statusBar.focusedRun) statusBar.update();
        if (change.kinds.has('finished')) commands.onRunFinished(change.run);
      }),
    ),
    toDisposable(
      client.onDidChangeState((s) => {
        statusBar.setConnectionState(s.state);
        if (s.state === 'connected') void commands.refresh(false);
      }),
    ),
    treeView.onDidChangeSelection((e) => {
      const node = e.selection[0];
      if (node) statusBar.focus(node.run);
    }),
    ...commands.register(),
  );

  client.connect().catch((err: Error) => logger.warn(`not connected to a bridge: ${err.message}`));
}

export function deactivate(): void {
  // A bridge this window started stops with it; runs go on on their nodes and can be attached again.
  if (startedBridge && startedBridge.exitCode === null) startedBridge.kill('SIGTERM');
  startedBridge = undefined;
}

/** The running bridge's connection file, else (when allowed) a `rankscope-cli bridge` started here. */
async function locate(settings: vscode.WorkspaceConfiguration, logger: Logger): Promise<ConnectionInfo> {
  const configured = settings.get<string>('runtimeDir') ?? '';
  const dir = configured || runtimeDir();
  const found = await findBridge(dir, logger);
  if (found) return found;
  if (startedBridge && startedBridge.exitCode === null) {
    throw new ConnectionFileError(`the bridge started by this window (pid ${startedBridge.pid ?? '?'}) has no connection file in ${dir}`);
  }
  if (!settings.get<boolean>('autoStartBridge', true)) {
    throw new ConnectionFileError(`no running RankScope bridge in ${dir}; start one with "rankscope-cli bridge"`);
  }
  const cliPath = settings.get<string>('cliPath') || 'rankscope-cli';
  const env = configured ? { ...process.env, RANKSCOPE_RUNTIME_DIR: configured } : process.env;
  const started = await startBridge({
    cliPath,
    env,
    logger,
    onOutput: (line) => logger.info(`bridge: ${line}`),
  });
  startedBridge = started.process;
  started.process.once('exit', (code, signal) => {
    logger.warn(`the bridge this window started exited (${signal ?? `status ${code}`})`);
    if (startedBridge === started.process) startedBridge = undefined;
  });
  return started.info;
}

function toDisposable(d: { dispose(): void } | (() => void)): vscode.Disposable {
  return new vscode.Disposable(typeof d === 'function' ? d : () => d.dispose());
}
