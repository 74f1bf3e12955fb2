// SPDX-License-Identifier: MIT
// A rank waiting under gdbserver → a C/C++ (cppdbg) session attached to it. A run.debugReady for a launch
// asked for it starts the session at once; a rank found waiting in a snapshot (a run attached to or followed
// again) is offered first, as another debugger may hold it. Without the C/C++ extension, the bridge's ready
// gdb command line is offered in a terminal instead.

import * as vscode from 'vscode';
import { cppdbgConfiguration, DebugOffer, DebugReadyParams, Logger } from '../client';

const CPPTOOLS = 'ms-vscode.cpptools';
const DEBUG = 'Debug';
const TERMINAL = 'Open gdb in a terminal';
const COPY = 'Copy gdb command';

export class DebugLauncher {
  /** Runs this window launched with debug_rank: their rank is debugged at once, however it is learned of. */
  private readonly launched = new Set<string>();

  constructor(private readonly logger: Logger) {}

  /** This window launched `run` with debug_rank. */
  expect(run: string): void {
    this.launched.add(run);
  }

  /** What the tracker's onDebugReady calls. */
  async handle(offer: DebugOffer): Promise<void> {
    const asked = this.launched.delete(offer.ready.run);
    if (offer.origin === 'notification' || asked) await this.start(offer.ready);
    else await this.offer(offer.ready);
  }

  /** Asks first: debug the waiting rank, open gdb in a terminal, or copy its command line. */
  async offer(ready: DebugReadyParams): Promise<void> {
    this.logger.info(`rank ${ready.rank} of run ${ready.run} waits under gdbserver at ${ready.address}`);
    const choice = await vscode.window.showInformationMessage(
      `RankScope: rank ${ready.rank} of run ${ready.run} (${ready.host}) waits under gdbserver at ${ready.address} for a debugger.`,
      DEBUG,
      TERMINAL,
      COPY,
    );
    if (choice === DEBUG) await this.start(ready);
    else if (choice) await this.terminalAction(ready, choice);
  }

  async start(ready: DebugReadyParams): Promise<void> {
    const settings = vscode.workspace.getConfiguration('rankscope.debug');
    const config = cppdbgConfiguration(ready, {
      miDebuggerPath: settings.get<string>('miDebuggerPath') || 'gdb',
      sourceFileMap: settings.get<Record<string, string>>('sourceFileMap') ?? {},
    });
    this.logger.info(`rank ${ready.rank} of run ${ready.run} waits under gdbserver at ${ready.address}: debugging it`);
    if (!vscode.extensions.getExtension(CPPTOOLS)) {
      await this.offerTerminal(ready, `The C/C++ extension (${CPPTOOLS}) is not installed.`);
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    const started = await vscode.debug.startDebugging(folder, config);
    if (!started) await this.offerTerminal(ready, 'The C/C++ debug session did not start.');
  }

  private async offerTerminal(ready: DebugReadyParams, why: string): Promise<void> {
    const choice = await vscode.window.showWarningMessage(
      `${why} Rank ${ready.rank} waits under gdbserver at ${ready.address}.`,
      TERMINAL,
      COPY,
    );
    if (choice) await this.terminalAction(ready, choice);
  }

  private async terminalAction(ready: DebugReadyParams, choice: string): Promise<void> {
    if (choice === TERMINAL) {
      const terminal = vscode.window.createTerminal({ name: `gdb rank ${ready.rank}`, cwd: ready.source_dir || undefined });
      terminal.show();
      terminal.sendText(ready.gdb_command, true);
    } else if (choice === COPY) {
      await vscode.env.clipboard.writeText(ready.gdb_command);
    }
  }
}
