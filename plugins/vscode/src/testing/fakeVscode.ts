// SPDX-License-Identifier: MIT
// A stand-in for the `vscode` module, for running the extension's own code (activate, commands, views) in
// node without VS Code: the parts of the API the extension calls, each recording what it was given. It is
// deliberately small; the type check against @types/vscode covers the API's shapes, this covers behaviour.

import Module from 'node:module';
import * as path from 'node:path';

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  event = (listener: Listener<T>): Disposable => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(value: T): void {
    for (const l of [...this.listeners]) l(value);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Disposable {
  constructor(private readonly fn: () => unknown) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  get path(): string {
    return this.fsPath;
  }
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, path.join(base.fsPath, ...parts));
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: Position | number, b: Position | number, c?: number, d?: number) {
    if (typeof a === 'number') {
      this.start = new Position(a, b as number);
      this.end = new Position(c as number, d as number);
    } else {
      this.start = a;
      this.end = b as Position;
    }
  }
}

export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
  Information = 2,
  Hint = 3,
}

export class Diagnostic {
  source?: string;
  constructor(
    readonly range: Range,
    readonly message: string,
    readonly severity: DiagnosticSeverity = DiagnosticSeverity.Error,
  ) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: unknown;
  iconPath?: unknown;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  constructor(public value = '') {}
  appendMarkdown(text: string): MarkdownString {
    this.value += text;
    return this;
  }
  appendText(text: string): MarkdownString {
    this.value += text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
    return this;
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ViewColumn {
  Active = -1,
  Beside = -2,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

// What the extension did, for the tests to look at ------------------------------------------------------

export class FakeOutputChannel {
  text = '';
  shown = 0;
  constructor(readonly name: string) {}
  append(text: string): void {
    this.text += text;
  }
  appendLine(text: string): void {
    this.text += `${text}\n`;
  }
  info(text: string): void {
    this.appendLine(`[info] ${text}`);
  }
  warn(text: string): void {
    this.appendLine(`[warning] ${text}`);
  }
  error(text: string): void {
    this.appendLine(`[error] ${text}`);
  }
  show(): void {
    this.shown++;
  }
  clear(): void {
    this.text = '';
  }
  dispose(): void {}
}

export class FakeWebview {
  html = '';
  readonly cspSource = 'https://fake.vscode-cdn.net';
  readonly posted: unknown[] = [];
  readonly received = new EventEmitter<unknown>();
  readonly onDidReceiveMessage = this.received.event;
  asWebviewUri(uri: Uri): Uri {
    return Uri.joinPath(Uri.file('/webview'), uri.fsPath);
  }
  postMessage(message: unknown): Promise<boolean> {
    this.posted.push(JSON.parse(JSON.stringify(message)));
    return Promise.resolve(true);
  }
}

export class FakeWebviewPanel {
  readonly webview = new FakeWebview();
  private readonly disposed = new EventEmitter<void>();
  readonly onDidDispose = this.disposed.event;
  constructor(
    readonly viewType: string,
    public title: string,
    readonly options: { enableScripts?: boolean; localResourceRoots?: Uri[] },
  ) {}
  reveal(): void {}
  dispose(): void {
    this.disposed.fire();
  }
}

export class FakeDiagnosticCollection {
  readonly entries = new Map<string, Diagnostic[]>();
  constructor(readonly name: string) {}
  set(uri: Uri, diagnostics: Diagnostic[]): void {
    this.entries.set(uri.fsPath, diagnostics);
  }
  delete(uri: Uri): void {
    this.entries.delete(uri.fsPath);
  }
  clear(): void {
    this.entries.clear();
  }
  dispose(): void {}
}

export interface ShownMessage {
  severity: 'error' | 'warning' | 'info' | 'status';
  text: string;
  actions: string[];
}

export class FakeTextDocument {
  isDirty = false;
  constructor(
    readonly uri: Uri,
    private text: string,
    readonly isUntitled = false,
    readonly languageId = 'json',
  ) {}
  getText(): string {
    return this.text;
  }
  save(): Promise<boolean> {
    this.isDirty = false;
    return Promise.resolve(true);
  }
  positionAt(offset: number): Position {
    const before = this.text.slice(0, offset);
    const line = before.split('\n').length - 1;
    return new Position(line, offset - (before.lastIndexOf('\n') + 1));
  }
}

/** Everything the fake recorded, and the answers it gives to prompts. */
export const recorded = {
  outputs: new Map<string, FakeOutputChannel>(),
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  treeViews: new Map<string, { provider: { getChildren(e?: unknown): unknown; getTreeItem(e: unknown): TreeItem } }>(),
  statusBarItems: [] as { text: string; tooltip?: unknown; visible: boolean }[],
  panels: [] as FakeWebviewPanel[],
  diagnostics: new Map<string, FakeDiagnosticCollection>(),
  messages: [] as ShownMessage[],
  debugSessions: [] as unknown[],
  terminals: [] as { name: string; sent: string[] }[],
  clipboard: '',
  config: new Map<string, unknown>(),
  installedExtensions: new Set<string>(),
  /** The answer to showInputBox, and per message text prefix the action chosen. */
  inputBoxAnswer: undefined as string | undefined,
  messageAnswer: (_m: ShownMessage): string | undefined => undefined,
  activeDocument: undefined as FakeTextDocument | undefined,
};

const show =
  (severity: ShownMessage['severity']) =>
  (text: string, ...actions: unknown[]): Promise<string | undefined> => {
    const message = { severity, text, actions: actions.filter((a): a is string => typeof a === 'string') };
    recorded.messages.push(message);
    return Promise.resolve(recorded.messageAnswer(message));
  };

export const window = {
  get activeTextEditor() {
    return recorded.activeDocument ? { document: recorded.activeDocument } : undefined;
  },
  createOutputChannel(name: string): FakeOutputChannel {
    const channel = new FakeOutputChannel(name);
    recorded.outputs.set(name, channel);
    return channel;
  },
  createTreeView(id: string, options: { treeDataProvider: { getChildren(e?: unknown): unknown; getTreeItem(e: unknown): TreeItem } }) {
    recorded.treeViews.set(id, { provider: options.treeDataProvider });
    const selection = new EventEmitter<unknown>();
    return { onDidChangeSelection: selection.event, reveal: () => Promise.resolve(), dispose: () => undefined };
  },
  createStatusBarItem() {
    const item = {
      text: '',
      tooltip: undefined as unknown,
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {},
    };
    recorded.statusBarItems.push(item);
    return item;
  },
  createWebviewPanel(viewType: string, title: string, _show: unknown, options: { enableScripts?: boolean; localResourceRoots?: Uri[] }) {
    const panel = new FakeWebviewPanel(viewType, title, options);
    recorded.panels.push(panel);
    return panel;
  },
  createTerminal(options: { name: string }) {
    const terminal = { name: options.name, sent: [] as string[] };
    recorded.terminals.push(terminal);
    return { show: () => undefined, sendText: (t: string) => terminal.sent.push(t) };
  },
  showErrorMessage: show('error'),
  showWarningMessage: show('warning'),
  showInformationMessage: show('info'),
  setStatusBarMessage(text: string) {
    recorded.messages.push({ severity: 'status', text, actions: [] });
    return new Disposable(() => undefined);
  },
  withProgress<T>(_options: unknown, task: (progress: { report(): void }) => Promise<T>): Promise<T> {
    return task({ report: () => undefined });
  },
  showInputBox(options: { validateInput?: (v: string) => string | undefined }): Promise<string | undefined> {
    const answer = recorded.inputBoxAnswer;
    if (answer !== undefined && options.validateInput?.(answer)) return Promise.resolve(undefined);
    return Promise.resolve(answer);
  },
  showQuickPick<T>(items: T[]): Promise<T | undefined> {
    return Promise.resolve(items[0]);
  },
};

export const workspace = {
  workspaceFolders: undefined,
  getConfiguration(section: string) {
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const full = `${section}.${key}`;
        return recorded.config.has(full) ? (recorded.config.get(full) as T) : fallback;
      },
    };
  },
};

export const languages = {
  createDiagnosticCollection(name: string): FakeDiagnosticCollection {
    const collection = new FakeDiagnosticCollection(name);
    recorded.diagnostics.set(name, collection);
    return collection;
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    recorded.commands.set(id, fn);
    return new Disposable(() => recorded.commands.delete(id));
  },
  executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    const fn = recorded.commands.get(id);
    return Promise.resolve(fn ? fn(...args) : undefined);
  },
};

export const extensions = {
  getExtension(id: string) {
    return recorded.installedExtensions.has(id) ? { id } : undefined;
  },
};

export const debug = {
  startDebugging(_folder: unknown, config: unknown): Promise<boolean> {
    recorded.debugSessions.push(config);
    return Promise.resolve(true);
  },
};

export const env = {
  clipboard: {
    writeText(text: string): Promise<void> {
      recorded.clipboard = text;
      return Promise.resolve();
    },
  },
};

/** Makes `require('vscode')` resolve to this module, for the rest of the process. */
export function installFakeVscode(): void {
  const m = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const original = m._resolveFilename;
  m._resolveFilename = function (request: string, ...rest: unknown[]): string {
    if (request === 'vscode') return __filename;
    return original.call(this, request, ...rest);
  };
}
