// The console's JSON editor (CodeMirror 6) over every <textarea data-json-editor> (Create and
// Edit Configuration, the Agent page's Configuration tab), loaded only by those pages.
//
// - The textarea stays the form's field: it is hidden and kept equal to the editor's text, so
//   the form posts (and htmx sends) exactly what it did without JavaScript.
// - As you type (after a pause), a syntax error is found here (editor/json-syntax.js: the
//   server's words, line and column); a document that is JSON goes to the textarea's
//   data-check-url, the server's own validation (OCC's rules, then the pinned runtime's
//   schema), so no copy of the schema lives in the browser. Problems are underlined and listed
//   in the element named by data-status at "Line L, column C"; pressing one moves the cursor there.
// - The extensions are few on purpose (docs/performance.md, "Console assets"): no basicSetup
//   and no @codemirror/lint, whose tooltips and panel the list below the editor makes redundant.
// - The policy allows no inline style: CodeMirror's own styles go in a <style> with the nonce
//   this script tag carries (EditorView.cspNonce); the look is editor.css.
import { EditorState, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, keymap, lineNumbers } from "@codemirror/view";
import { history, historyKeymap, indentLess, indentMore, standardKeymap } from "@codemirror/commands";
import { bracketMatching, syntaxHighlighting } from "@codemirror/language";
import { json } from "@codemirror/lang-json";
import { classHighlighter } from "@lezer/highlight";
import { jsonSyntaxProblem } from "./editor/json-syntax.js";

const CHECK_DELAY_MS = 500;
const NONCE = (document.currentScript && document.currentScript.nonce) || "";
const UNCHECKED = "The document could not be checked just now; saving checks it again.";

// --- where problems are -------------------------------------------------------------------------

// The server's line and column (columns in characters) as an offset of CodeMirror's text
// (UTF-16 units), clamped into the document.
function offsetAt(doc, line, column) {
  const at = doc.line(Math.min(Math.max(line, 1), doc.lines));
  let offset = at.from;
  for (let i = 1; i < column && offset < at.to; i++) {
    offset += at.text.codePointAt(offset - at.from) > 0xffff ? 2 : 1;
  }
  return offset;
}

// A problem as the editor holds it: the range to underline (at least one character, so a
// problem at the very end or on an empty line still shows) and where it is, in words.
function placed(doc, problem) {
  let from = offsetAt(doc, problem.line, problem.column);
  let to = offsetAt(doc, problem.endLine || problem.line, problem.endColumn || problem.column);
  if (to <= from) to = Math.min(from + 1, doc.length);
  if (from >= to) from = Math.max(to - 1, 0);
  return { from, to, message: problem.message, where: `Line ${problem.line}, column ${problem.column}` };
}

const setProblems = StateEffect.define();
const underlines = StateField.define({
  create: () => Decoration.none,
  update(marks, transaction) {
    for (const effect of transaction.effects) if (effect.is(setProblems)) return effect.value;
    return marks.map(transaction.changes);
  },
  provide: (field) => EditorView.decorations.from(field),
});

function underlined(problems) {
  const marks = problems.filter((p) => p.to > p.from).map((p) => Decoration.mark({
    class: "cm-problem", attributes: { title: `${p.where}: ${p.message}` },
  }).range(p.from, p.to));
  return Decoration.set(marks, true);
}

// --- the check ----------------------------------------------------------------------------------

async function serverProblems(url, token, text) {
  const body = new FormData();
  body.append("configuration_json", text);
  const response = await fetch(url, { method: "POST", body, credentials: "same-origin",
                                      headers: { "X-CSRFToken": token, Accept: "application/json" } });
  if (!response.ok) throw new Error(`the check answered ${response.status}`);
  return (await response.json()).problems;
}

// The problems of the editor's text now, or null when the server could not be asked.
async function problemsOf(doc, url, token) {
  const text = doc.toString();
  const syntax = jsonSyntaxProblem(text);
  if (syntax) return [placed(doc, syntax)];
  if (!url) return [];
  try {
    return (await serverProblems(url, token, text)).map((problem) => placed(doc, problem));
  } catch {
    return null;
  }
}

function paragraph(className, text) {
  return Object.assign(document.createElement("p"), { className, textContent: text });
}

// The list (role=status) of what the check found, each entry a button to its place.
function showProblems(status, view, found) {
  if (found === null) {
    status.replaceChildren(paragraph("hint", UNCHECKED));
    return;
  }
  if (!found.length) {
    status.replaceChildren(paragraph("ok", "No problems found."));
    return;
  }
  const list = document.createElement("ul");
  list.className = "editor-problems";
  for (const problem of found) {
    const place = Object.assign(document.createElement("button"),
                                { type: "button", className: "link-button", textContent: problem.where });
    place.addEventListener("click", () => {
      view.dispatch({ selection: { anchor: problem.from, head: problem.to }, scrollIntoView: true });
      view.focus();
    });
    const entry = document.createElement("li");
    entry.append(place, `: ${problem.message}`);
    list.append(entry);
  }
  status.replaceChildren(paragraph("", found.length === 1 ? "1 problem:" : `${found.length} problems:`), list);
}

// Runs the check a pause after the last change (and once at the start); an answer for a text
// that has changed since is dropped, the next check answers for the new one.
function scheduler(textarea, status) {
  const url = textarea.getAttribute("data-check-url");
  const tokenField = textarea.form && textarea.form.querySelector("[name=csrfmiddlewaretoken]");
  const token = tokenField ? tokenField.value : "";
  let timer = 0;
  async function check(view) {
    const doc = view.state.doc;
    const found = await problemsOf(doc, url, token);
    if (view.state.doc !== doc) return;
    if (found && found.length) view.contentDOM.setAttribute("aria-invalid", "true");
    else view.contentDOM.removeAttribute("aria-invalid");
    view.dispatch({ effects: setProblems.of(underlined(found || [])) });
    showProblems(status, view, found);
  }
  return (view) => {
    clearTimeout(timer);
    timer = setTimeout(() => check(view), CHECK_DELAY_MS);
  };
}

// --- the editor ---------------------------------------------------------------------------------

// The save's own errors under the field (a refused save) go once the text changes: the live
// check has taken over (console.js does the same for plain fields).
function forgetSavedErrors(textarea) {
  textarea.removeAttribute("aria-invalid");
  for (const id of (textarea.getAttribute("aria-describedby") || "").split(/\s+/)) {
    const errors = id && document.getElementById(id);
    if (errors && errors.classList.contains("field-errors")) errors.hidden = true;
  }
}

function mount(textarea) {
  if (textarea.occEditor) return;
  const status = document.getElementById(textarea.getAttribute("data-status")) || document.createElement("div");
  const label = document.querySelector(`label[for="${textarea.id}"]`);
  if (label && !label.id) label.id = `${textarea.id}-label`;
  const schedule = scheduler(textarea, status);
  let edited = false;
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        EditorView.cspNonce.of(NONCE),
        lineNumbers(),
        history(),
        json(),
        syntaxHighlighting(classHighlighter),
        bracketMatching(),
        underlines,
        EditorView.lineWrapping,
        // The editor deletes and moves itself (standardKeymap), so the browser's own editing never
        // adds style attributes the policy would refuse. Enter keeps the indentation; Tab is left
        // to the browser (it moves the focus on), Mod-] and Mod-[ indent.
        keymap.of([{ key: "Mod-]", run: indentMore }, { key: "Mod-[", run: indentLess },
                   ...standardKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({
          "aria-labelledby": label ? label.id : "",
          "aria-describedby": textarea.getAttribute("aria-describedby") || "",
          "aria-multiline": "true",
          spellcheck: "false",
          autocorrect: "off",
          autocapitalize: "off",
        }),
        EditorView.updateListener.of((update) => {
          if (!update.docChanged) return;
          textarea.value = update.state.doc.toString();
          if (!edited) {
            edited = true;
            forgetSavedErrors(textarea);
          }
          schedule(update.view);
        }),
      ],
    }),
  });
  const host = document.createElement("div");
  host.className = "json-editor-host";
  host.append(view.dom);
  textarea.hidden = true;
  textarea.after(host);
  textarea.occEditor = view;
  if (label) label.addEventListener("click", () => view.focus());
  schedule(view);
}

function mountAll(root) {
  if (!root || !root.querySelectorAll) return;
  if (root.matches && root.matches("textarea[data-json-editor]")) mount(root);
  root.querySelectorAll("textarea[data-json-editor]").forEach(mount);
}

// The error summary's link names the textarea (hidden now): it moves the focus to the editor.
// Capturing, so console.js's own handler for those links does not try the hidden field first.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest(".error-summary a[href^='#']");
  const textarea = link && document.getElementById(link.getAttribute("href").slice(1));
  if (!textarea || !textarea.occEditor) return;
  event.preventDefault();
  event.stopImmediatePropagation();
  textarea.occEditor.focus();
  textarea.occEditor.dom.scrollIntoView({ block: "center" });
}, true);
document.addEventListener("DOMContentLoaded", () => mountAll(document));
// A form re-rendered by htmx (a refused save) brings a new textarea.
document.addEventListener("htmx:load", (event) => mountAll(event.detail.elt));
