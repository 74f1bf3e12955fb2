// SPDX-License-Identifier: MIT
// src/client is the part tested without VS Code: nothing in it may import 'vscode'.

import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

test('src/client does not import vscode', async () => {
  const dir = path.resolve(__dirname, '..', '..', 'src', 'client');
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length > 5);
  for (const file of files) {
    const text = await fs.readFile(path.join(dir, file), 'utf8');
    assert.doesNotMatch(text, /from\s+['"]vscode['"]|require\(\s*['"]vscode['"]\s*\)/, `${file} imports vscode`);
  }
});
