// SPDX-License-Identifier: MIT
// One output channel per rank and one with every rank merged, fed by run.logLines (through the log
// follower, so lines come in order and once). Each batch is one append per channel, not one per line.

import * as vscode from 'vscode';
import { LogBatch } from '../client';

/** Ranks past this many share the merged channel only: VS Code's output list is not made for thousands. */
const MAX_RANK_CHANNELS = 32;

export class RankOutputs implements vscode.Disposable {
  private readonly merged: vscode.OutputChannel;
  private readonly perRank = new Map<number, vscode.OutputChannel>();
  /** The run each channel last showed, so a new run starts with a header. */
  private readonly shownRun = new Map<vscode.OutputChannel, string>();

  constructor(private readonly hostOf: (run: string, rank: number) => string | undefined) {
    this.merged = vscode.window.createOutputChannel('RankScope: all ranks');
  }

  append(batch: LogBatch): void {
    const texts = new Map<vscode.OutputChannel, string[]>();
    const add = (channel: vscode.OutputChannel, line: string): void => {
      let list = texts.get(channel);
      if (!list) {
        list = [];
        texts.set(channel, list);
        if (this.shownRun.get(channel) !== batch.run) {
          list.push(`──── run ${batch.run} ────`);
          this.shownRun.set(channel, batch.run);
        }
      }
      list.push(line);
    };
    for (const o of batch.omitted) {
      const note = `… ${o.count} earlier ${o.stream} lines of rank ${o.rank} not shown: rankscope-cli logs ${batch.run} --rank ${o.rank} --stream ${o.stream}`;
      add(this.merged, note);
      const channel = this.channel(o.rank);
      if (channel) add(channel, note);
    }
    for (const l of batch.lines) {
      const err = l.stream === 'err' ? ' err' : '';
      const host = this.hostOf(batch.run, l.rank);
      add(this.merged, `[${host ? `${host}:` : ''}${l.rank}${err}] ${l.text}`);
      const channel = this.channel(l.rank);
      // A rank's own channel shows its lines as written; the merged one says which stream each came from.
      if (channel) add(channel, l.text);
    }
    for (const [channel, lines] of texts) channel.append(`${lines.join('\n')}\n`);
  }

  show(rank?: number): void {
    const channel = rank === undefined ? this.merged : (this.channel(rank) ?? this.merged);
    channel.show(true);
  }

  dispose(): void {
    this.merged.dispose();
    for (const c of this.perRank.values()) c.dispose();
    this.perRank.clear();
  }

  private channel(rank: number): vscode.OutputChannel | undefined {
    let channel = this.perRank.get(rank);
    if (!channel && this.perRank.size < MAX_RANK_CHANNELS) {
      channel = vscode.window.createOutputChannel(`RankScope: rank ${rank}`);
      this.perRank.set(rank, channel);
    }
    return channel;
  }
}
