// SPDX-License-Identifier: MIT
// Findings as clickable messages: each new diagnosis (hang, straggler, root cause, divergence) pops up
// with actions that focus the rank's output or the run; a diagnosis that names FILE:LINE of a file that
// exists goes into the Problems panel. A job the bridge refused goes there too, each issue at its field.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as jsonc from 'jsonc-parser';
import * as vscode from 'vscode';
import { Diagnosis, JobIssue, RunChange, RunStore } from '../client';

const FILE_LINE = /((?:\/|\.{1,2}\/)?[\w.+\-/]+\.(?:cpp|cc|cxx|c|h|hpp|hh|cu|py)):(\d+)/g;

export interface DiagnosisActions {
  showRankOutput(run: string, rank: number): void;
  showRun(run: string): void;
}

export class DiagnosisReporter implements vscode.Disposable {
  private readonly findings = vscode.languages.createDiagnosticCollection('rankscope');
  private readonly jobIssues = vscode.languages.createDiagnosticCollection('rankscope-job');
  private readonly subs: vscode.Disposable[] = [];
  /** Keys already shown as a pop-up, per run: a diagnosis updated later is not shown again. */
  private readonly announced = new Set<string>();

  constructor(
    private readonly store: RunStore,
    private readonly actions: DiagnosisActions,
    private readonly sourceDirs: () => string[],
    private readonly popups: () => boolean,
  ) {
    this.subs.push(new vscode.Disposable(store.onDidChange((c) => this.onChange(c)).dispose));
  }

  /** Puts a refused job's issues on the job document, each at the JSON path it names. */
  showJobIssues(document: vscode.TextDocument, issues: JobIssue[]): void {
    const text = document.getText();
    const tree = jsonc.parseTree(text);
    const diagnostics = issues.map((issue) => {
      const range = rangeOfPath(document, tree, issue.path);
      const d = new vscode.Diagnostic(range, `${issue.path}: ${issue.message}`, vscode.DiagnosticSeverity.Error);
      d.source = 'RankScope';
      return d;
    });
    this.jobIssues.set(document.uri, diagnostics);
  }

  clearJobIssues(uri: vscode.Uri): void {
    this.jobIssues.delete(uri);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.findings.dispose();
    this.jobIssues.dispose();
  }

  private onChange(change: RunChange): void {
    if (change.changedDiagnoses.length === 0) return;
    for (const d of change.changedDiagnoses) {
      const key = `${change.run}\u0000${d.key}`;
      if (!d.resolved && !this.announced.has(key) && this.popups()) {
        this.announced.add(key);
        void this.popup(change.run, d);
      }
    }
    this.updateFindings();
  }

  private async popup(run: string, d: Diagnosis): Promise<void> {
    const severe = d.kind === 'root-cause' || d.kind === 'divergence' || d.kind === 'hang';
    const show = severe ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
    const rankActions = d.ranks.slice(0, 3).map((r) => `Show rank ${r} output`);
    const choice = await show(`RankScope ${d.kind}: ${d.message}`, ...rankActions, 'Show run');
    if (!choice) return;
    if (choice === 'Show run') {
      this.actions.showRun(run);
      return;
    }
    const rank = Number(/rank (\d+)/.exec(choice)?.[1]);
    if (Number.isInteger(rank)) this.actions.showRankOutput(run, rank);
  }

  /** Rebuilds the Problems entries from every unresolved diagnosis that names an existing file:line. */
  private updateFindings(): void {
    const byFile = new Map<string, vscode.Diagnostic[]>();
    for (const view of this.store.all()) {
      for (const d of view.diagnoses.values()) {
        if (d.resolved) continue;
        for (const m of d.message.matchAll(FILE_LINE)) {
          const file = this.resolve(m[1] as string);
          if (!file) continue;
          const line = Math.max(0, Number(m[2]) - 1);
          const diag = new vscode.Diagnostic(
            new vscode.Range(line, 0, line, Number.MAX_SAFE_INTEGER),
            `${d.kind} (run ${view.id}, ranks ${d.ranks.join(',')}): ${d.message}`,
            d.kind === 'straggler' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Error,
          );
          diag.source = 'RankScope';
          const list = byFile.get(file) ?? [];
          list.push(diag);
          byFile.set(file, list);
        }
      }
    }
    this.findings.clear();
    for (const [file, list] of byFile) this.findings.set(vscode.Uri.file(file), list);
  }

  private resolve(file: string): string | undefined {
    if (path.isAbsolute(file)) return fs.existsSync(file) ? file : undefined;
    const roots = [...(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath), ...this.sourceDirs()];
    for (const root of roots) {
      const candidate = path.join(root, file);
      if (fs.existsSync(candidate)) return candidate;
    }
    return undefined;
  }
}

/** `nodes[1].port` → ['nodes', 1, 'port']; `hostfile:7` and other non-paths → their first word. */
export function parseJsonPath(p: string): jsonc.JSONPath {
  const segments: jsonc.JSONPath = [];
  const head = p.split(':')[0] ?? '';
  for (const part of head.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) break;
    if (m[1]) segments.push(m[1]);
    for (const index of (m[2] ?? '').matchAll(/\[(\d+)\]/g)) segments.push(Number(index[1]));
  }
  return segments;
}

function rangeOfPath(document: vscode.TextDocument, tree: jsonc.Node | undefined, p: string): vscode.Range {
  if (!tree) return new vscode.Range(0, 0, 0, 1);
  const segments = parseJsonPath(p);
  // The deepest node that exists: an unknown field is reported on its parent object.
  for (let n = segments.length; n >= 0; n--) {
    const node = jsonc.findNodeAtLocation(tree, segments.slice(0, n));
    if (!node) continue;
    const target = node.parent?.type === 'property' && n > 0 ? node.parent : node;
    const start = document.positionAt(target.offset);
    const end = document.positionAt(target.offset + (target === node ? node.length : (target.children?.[0]?.length ?? node.length)));
    return new vscode.Range(start, end);
  }
  return new vscode.Range(0, 0, 0, 1);
}
