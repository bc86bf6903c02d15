// The console's front-end build (`make assets`, docs/console.md "Front-end assets").
//
// - Every top-level src/*.css and src/*.js is an entry point, bundled (its imports resolved from
//   node_modules), minified and written as static/console/build/<name>.css|js. A file in a
//   sub-folder of src/ is only ever imported.
// - static/console/build/icons.svg: an SVG sprite of the Lucide icons the templates name with
//   `{% icon "name" %}` (found by scanning templates/), plus EXTRA_ICONS for icons that only
//   scripts or a variable name. An unknown icon name fails the build.
//
// Run with the Node of runtime/node (python -m devtools.assets does that): `node build.mjs`.
import { readdir, readFile, writeFile, mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);
const srcDir = path.join(here, "src");
// The tests point these elsewhere (tests/console/test_assets.py).
const outDir = path.resolve(process.env.OCC_ASSETS_OUTPUT || path.join(root, "static", "console", "build"));
const templatesDir = path.resolve(process.env.OCC_ASSETS_TEMPLATES || path.join(root, "templates"));
const lucideDir = path.join(here, "node_modules", "lucide-static", "icons");

// Icons named by a variable in a template or used by a script (not found by the scan).
const EXTRA_ICONS = [
  "check", "circle-alert", "circle-check", "copy", "info", "triangle-alert", "x",
];
// Browsers the console supports: esbuild lowers newer CSS (nesting) and JS for them.
const TARGETS = ["chrome111", "edge111", "firefox114", "safari16.4"];
// {% icon "name" %}, an include's icon="name", and the last argument of {% nav_item … "name" %}.
const ICON_USES = [
  /\{%\s*icon\s+["']([a-z0-9-]+)["']/g,
  /\bicon=["']([a-z0-9-]+)["']/g,
  /\{%\s*nav_item\s[^%]*["']([a-z0-9-]+)["']\s*%\}/g,
];

async function* walk(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full);
    else yield full;
  }
}

async function iconNames() {
  const names = new Set(EXTRA_ICONS);
  for await (const file of walk(templatesDir)) {
    if (!file.endsWith(".html")) continue;
    const text = await readFile(file, "utf8");
    for (const pattern of ICON_USES) for (const match of text.matchAll(pattern)) names.add(match[1]);
  }
  return [...names].sort();
}

async function buildSprite(names) {
  const symbols = [];
  const unknown = [];
  for (const name of names) {
    let svg;
    try {
      svg = await readFile(path.join(lucideDir, `${name}.svg`), "utf8");
    } catch {
      unknown.push(name);
      continue;
    }
    const body = svg.slice(svg.indexOf(">", svg.indexOf("<svg")) + 1, svg.lastIndexOf("</svg>"))
      .replace(/\s*\n\s*/g, "");
    // <use> of another document inherits from the page, not from this file's root: each
    // symbol carries Lucide's stroke attributes itself.
    symbols.push(`<symbol id="${name}" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" `
      + `stroke-linecap="round" stroke-linejoin="round">${body}</symbol>`);
  }
  if (unknown.length) {
    throw new Error(`unknown Lucide icon(s): ${unknown.join(", ")} (names: https://lucide.dev/icons)`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg"><!-- Lucide icons, ISC license -->${symbols.join("")}</svg>\n`;
}

async function main() {
  const entries = (await readdir(srcDir, { withFileTypes: true }))
    .filter((entry) => entry.isFile() && /\.(css|js)$/.test(entry.name))
    .map((entry) => path.join(srcDir, entry.name));
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const result = await esbuild.build({
    entryPoints: entries,
    outdir: outDir,
    bundle: true,
    minify: true,
    format: "iife",
    target: TARGETS,
    legalComments: "eof",
    logLevel: "warning",
    metafile: true,
    absWorkingDir: here,
  });
  const names = await iconNames();
  await writeFile(path.join(outDir, "icons.svg"), await buildSprite(names));
  const outputs = [...Object.keys(result.metafile.outputs).map((file) => path.resolve(here, file)),
    path.join(outDir, "icons.svg")];
  for (const file of outputs.sort()) {
    const data = await readFile(file);
    console.log(`  ${path.relative(root, file)}: ${data.length} B, ${gzipSync(data, { level: 9 }).length} B gzip`);
  }
  console.log(`  ${names.length} icons: ${names.join(" ")}`);
}

main().catch((error) => {
  console.error(`assets: ${error.message}`);
  process.exit(1);
});
