// SPDX-License-Identifier: MIT
// Formatting at the edge: the store keeps raw numbers, the views format them here.

export function formatLoss(loss: number): string {
  if (Number.isNaN(loss)) return 'nan';
  if (!Number.isFinite(loss)) return loss > 0 ? 'inf' : '-inf';
  if (loss !== 0 && (Math.abs(loss) < 1e-3 || Math.abs(loss) >= 1e4)) return loss.toExponential(2);
  return loss.toFixed(4);
}

export function formatPercent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}
