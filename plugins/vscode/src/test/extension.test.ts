// SPDX-License-Identifier: MIT
// The extension's own code (activate, commands, views) in node, with a recording stand-in for the `vscode`
// module and the real bridge, which the extension starts itself: a job run from the "editor" ends up in the
// tree, the output channels, the status bar and the chart's webview; a bad job's issues land at their fields.

import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type * as Extension from '../extension';
import type * as DebugLauncherModule from '../views/debugLauncher';
import { findBridge, isPidAlive, silentLogger } from '../client';
import { FakeTextDocument, installFakeVscode, recorded, TreeItem, Uri } from '../testing/fakeVscode';
import { cliUnderTest, debugJob, PrivateEnv, runSkipReason, skipReason, waitFor } from '../testing/harness';

installFakeVscode();
// After the fake is in place: these require('vscode').
const extension = require('../extension') as typeof Extension;
const { DebugLauncher } = require('../views/debugLauncher') as typeof DebugLauncherModule;

const pluginDir = path.resolve(__dirname, '..', '..');

describe('the extension, driven as a person would', { skip: skipReason() ?? runSkipReason(), timeout: 120_000 }, () => {
  let env: PrivateEnv;
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: Uri.file(pluginDir) };

  before(async () => {
    env = await PrivateEnv.create();
    Object.assign(process.env, env.env());
    recorded.config.set('rankscope.cliPath', cliUnderTest());
    recorded.config.set('rankscope.runtimeDir', env.runtimeDir);
    extension.activate(context as never);
  });

  after(async () => {
    for (const d of context.subscriptions) d.dispose();
    extension.deactivate();
    await waitFor('the bridge it started to stop', async () => ((await findBridge(env.runtimeDir)) ? undefined : true), 10_000);
    await env.cleanup();
  });

  const tree = () => {
    const view = recorded.treeViews.get('rankscope.runs');
    assert.ok(view, 'the Runs view is registered');
    return view.provider;
  };
  const output = (name: string) => recorded.outputs.get(name)?.text ?? '';

  test('starts a bridge of its own when none runs, and connects', async () => {
    const info = await waitFor('a connection file', () => findBridge(env.runtimeDir), 30_000);
    assert.ok(isPidAlive(info.pid));
    await waitFor('the connected status', () => (recorded.statusBarItems[0]?.text.includes('RankScope') ? true : undefined));
    const log = output('RankScope');
    assert.match(log, /started .* bridge \(pid \d+\)/);
    assert.ok(!log.includes(info.token), 'the token is never logged');
  });

  test('Debug on one node: the job in the editor runs; tree, outputs, status bar and chart follow it', async () => {
    const jobFile = path.join(env.root, 'job.json');
    await fs.writeFile(jobFile, JSON.stringify(await debugJob('from-the-editor', 8, 30), null, 2));
    recorded.activeDocument = new FakeTextDocument(Uri.file(jobFile), await fs.readFile(jobFile, 'utf8'));
    await recorded.commands.get('rankscope.debugJob')?.();

    const runs = tree().getChildren() as { kind: string; run: string }[];
    assert.equal(runs.length, 1);
    const runNode = runs[0] as { kind: string; run: string };
    const finished = await waitFor('the run to finish in the tree', () => {
      const item = tree().getTreeItem(runNode);
      return String(item.description).startsWith('finished') ? item : undefined;
    }, 60_000);
    assert.equal(finished.label, 'from-the-editor');
    assert.equal(finished.contextValue, 'run.stored.finished');

    const ranks = tree().getChildren(runNode) as unknown[];
    assert.equal(ranks.length, 2);
    const rankItems = ranks.map((r) => tree().getTreeItem(r) as TreeItem);
    assert.deepEqual(rankItems.map((i) => i.label), ['rank 0', 'rank 1']);
    for (const item of rankItems) assert.match(String(item.description), /^finished · .* · step 8\/8 · loss \d+\.\d{4}$/);

    await waitFor('rank 1 output', () => (/step 8\//.test(output('RankScope: rank 1')) ? true : undefined), 10_000);
    assert.match(output('RankScope: rank 0'), /^──── run \S+ ────\n/);
    assert.match(output('RankScope: rank 0'), /\n\[rank 0\] epoch 1\/1 step 1\//);
    assert.match(output('RankScope: all ranks'), /\[\S*:1 err\] \[rank 1\] epoch 1\/1 step 8\//);

    const status = recorded.statusBarItems[0];
    assert.ok(status?.visible);
    assert.match(status?.text ?? '', /^\$\(pass\) from-the-editor: 8\/8 · 100% · loss \d+\.\d{4}$/);

    const panel = recorded.panels[0];
    assert.ok(panel, 'the loss chart opened');
    const html = panel.webview.html;
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1] ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-[A-Za-z0-9+/=]+'/);
    assert.doesNotMatch(csp, /unsafe-(inline|eval)/);
    assert.match(html, /<script nonce="[^"]+" src="[^"]*node_modules\/chart\.js\/dist\/chart\.umd\.js">/);
    await fs.access(path.join(pluginDir, 'node_modules', 'chart.js', 'dist', 'chart.umd.js'));
    panel.webview.received.fire({ type: 'ready' }); // what media/lossChart.js posts once loaded
    const reset = await waitFor('the full series', () =>
      panel.webview.posted.find((m): m is { type: string; series: { rank: number; points: [number, number | null][] }[] } =>
        (m as { type?: string }).type === 'reset'),
    );
    assert.deepEqual(reset.series.map((s) => s.rank), [0, 1]);
    for (const s of reset.series) assert.deepEqual(s.points.map((p) => p[0]), [1, 2, 3, 4, 5, 6, 7, 8]);
  });

  test('a job the bridge refuses: each issue at its field in the Problems panel', async () => {
    const text = JSON.stringify({ version: 1, name: 'bad', modee: 'debug', trainer: { epochs: 0 }, debug: { node: 'local' } }, null, 2);
    recorded.activeDocument = new FakeTextDocument(Uri.file(path.join(env.root, 'Untitled-1')), text, true);
    const before = recorded.messages.length;
    await recorded.commands.get('rankscope.debugJob')?.();
    const shown = recorded.messages.slice(before).find((m) => m.severity === 'error');
    assert.match(shown?.text ?? '', /the job has \d+ problems?/);
    assert.deepEqual(shown?.actions, ['Show Problems']);
    const issues = recorded.diagnostics.get('rankscope-job')?.entries.get(path.join(env.root, 'Untitled-1')) ?? [];
    const modee = issues.find((d) => d.message.startsWith('modee:'));
    assert.ok(modee, JSON.stringify(issues.map((d) => d.message)));
    assert.equal(modee.range.start.line, 3, 'the unknown key is marked where it is');
    const epochs = issues.find((d) => d.message.startsWith('trainer.epochs:'));
    assert.equal(epochs?.range.start.line, 5);
  });

  test('run.debugReady: a cppdbg session, or the gdb command line without the C/C++ extension', async () => {
    const ready = {
      run: 'r',
      rank: 1,
      host: 'local',
      address: '127.0.0.1:40213',
      program: '/tmp/rankscope-trainer',
      source_dir: '/tmp/trainer',
      sysroot: '/',
      gdb_command: "gdb -q -ex 'set sysroot /' -ex 'target remote 127.0.0.1:40213' /tmp/rankscope-trainer",
    };
    recorded.installedExtensions.add('ms-vscode.cpptools');
    await new DebugLauncher(silentLogger).handle({ ready, origin: 'notification' });
    const session = recorded.debugSessions.at(-1) as Record<string, unknown>;
    assert.equal(session['type'], 'cppdbg');
    assert.equal(session['MIMode'], 'gdb');
    assert.equal(session['miDebuggerServerAddress'], '127.0.0.1:40213');
    assert.equal(session['program'], '/tmp/rankscope-trainer');
    assert.deepEqual(session['sourceFileMap'], { '/tmp/trainer': '/tmp/trainer' }, 'source_dir maps to itself');
    assert.ok((session['setupCommands'] as { text: string }[]).some((c) => c.text === 'set sysroot /'));

    recorded.config.set('rankscope.debug.sourceFileMap', { '/tmp/trainer': '/home/me/trainer' });
    await new DebugLauncher(silentLogger).start({ ...ready, build_source_dir: '/build/trainer' });
    recorded.config.delete('rankscope.debug.sourceFileMap');
    const mapped = recorded.debugSessions.at(-1) as Record<string, unknown>;
    assert.deepEqual(
      mapped['sourceFileMap'],
      { '/build/trainer': '/tmp/trainer', '/tmp/trainer': '/home/me/trainer' },
      "build_source_dir maps to source_dir; the user's setting adds its own",
    );

    recorded.installedExtensions.clear();
    recorded.messageAnswer = (m) => (m.actions.includes('Open gdb in a terminal') ? 'Open gdb in a terminal' : undefined);
    await new DebugLauncher(silentLogger).start(ready);
    recorded.messageAnswer = () => undefined;
    assert.deepEqual(recorded.terminals.at(-1)?.sent, [ready.gdb_command]);
  });

  test("a snapshot's debug (a run attached to) is offered first; a run launched with debug_rank is debugged at once", async () => {
    const ready = {
      run: 'attached',
      rank: 0,
      host: 'node-a',
      address: '127.0.0.1:40999',
      program: '/tmp/rankscope-trainer',
      source_dir: '/tmp/trainer',
      gdb_command: "gdb -q -ex 'target remote 127.0.0.1:40999' /tmp/rankscope-trainer",
    };
    recorded.installedExtensions.add('ms-vscode.cpptools');
    const launcher = new DebugLauncher(silentLogger);
    const sessions = recorded.debugSessions.length;

    let before = recorded.messages.length;
    await launcher.handle({ ready, origin: 'snapshot' });
    const offered = recorded.messages.slice(before).find((m) => m.text.includes('waits under gdbserver at 127.0.0.1:40999'));
    assert.deepEqual(offered?.actions, ['Debug', 'Open gdb in a terminal', 'Copy gdb command']);
    assert.equal(recorded.debugSessions.length, sessions, 'nothing started unasked');

    recorded.messageAnswer = (m) => (m.actions.includes('Copy gdb command') ? 'Copy gdb command' : undefined);
    await launcher.handle({ ready, origin: 'snapshot' });
    assert.equal(recorded.clipboard, ready.gdb_command);

    recorded.messageAnswer = (m) => (m.actions.includes('Debug') ? 'Debug' : undefined);
    await launcher.handle({ ready, origin: 'snapshot' });
    recorded.messageAnswer = () => undefined;
    assert.equal(recorded.debugSessions.length, sessions + 1);
    assert.equal((recorded.debugSessions.at(-1) as Record<string, unknown>)['miDebuggerServerAddress'], '127.0.0.1:40999');

    launcher.expect('launched-here');
    before = recorded.messages.length;
    await launcher.handle({ ready: { ...ready, run: 'launched-here' }, origin: 'snapshot' });
    assert.equal(recorded.debugSessions.length, sessions + 2, 'asked for with the launch: no question');
    assert.equal(recorded.messages.length, before);
    recorded.installedExtensions.clear();
  });
});
