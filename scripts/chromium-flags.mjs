// The flags every headless Chromium of this repository runs with (the inspector's browser tests
// and scripts/inspector-screenshots.mjs): headless, no sandbox (root), nothing that reaches the
// network. Plain JavaScript, so the script and the TypeScript tests share it.
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
