// Where a JSON text stops being JSON, said the way the server says it.
//
// The browser's JSON.parse decides whether the text is JSON; when it is not, this scanner
// follows CPython's own (Modules/_json.c, which occ/openclaw/positions.py's parse_document
// runs) to find the same place and the same words: "Not valid JSON: Expecting ',' delimiter."
// at the same line and column (1-based, columns in characters). The browsers' own messages
// differ from one engine to the next and do not always say where. NaN and Infinity are refused
// as the server refuses them. tests/console/test_editor_syntax.py holds the two side by side.

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);
const HEX = /^[0-9a-fA-F]{4}$/;
const CONSTANTS = ["NaN", "Infinity", "-Infinity"];

// ``end``: where the part to underline ends, when it is more than the one character at ``at``.
class Refusal extends Error {
  constructor(message, at, end) {
    super(message);
    this.at = at;
    this.end = end;
  }
}

class Scanner {
  constructor(text) {
    this.chars = Array.from(text); // code points: the server counts characters, not UTF-16 units
  }

  skip(index) {
    while (index < this.chars.length && WHITESPACE.has(this.chars[index])) index++;
    return index;
  }

  startsWith(word, index) {
    for (let i = 0; i < word.length; i++) if (this.chars[index + i] !== word[i]) return false;
    return true;
  }

  document() {
    if (this.chars[0] === "\ufeff") throw new Refusal("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    const end = this.skip(this.value(this.skip(0)));
    if (end !== this.chars.length) throw new Refusal("Extra data", end);
  }

  value(index) {
    const c = this.chars[index];
    if (c === '"') return this.string(index + 1);
    if (c === "{") return this.object(index + 1);
    if (c === "[") return this.array(index + 1);
    for (const word of ["null", "true", "false"]) if (this.startsWith(word, index)) return index + word.length;
    for (const word of CONSTANTS) {
      if (this.startsWith(word, index)) {
        throw new Refusal(`${word} is not a JSON value`, index, index + word.length);
      }
    }
    return this.number(index);
  }

  number(start) {
    const digit = (i) => this.chars[i] >= "0" && this.chars[i] <= "9";
    let index = start;
    if (this.chars[index] === "-") index++;
    if (this.chars[index] >= "1" && this.chars[index] <= "9") {
      while (digit(index)) index++;
    } else if (this.chars[index] === "0") {
      index++;
    } else {
      throw new Refusal("Expecting value", start);
    }
    if (this.chars[index] === "." && digit(index + 1)) {
      index += 2;
      while (digit(index)) index++;
    }
    if (this.chars[index] === "e" || this.chars[index] === "E") {
      const exponent = index++;
      if (this.chars[index] === "+" || this.chars[index] === "-") index++;
      while (digit(index)) index++;
      if (!digit(index - 1)) index = exponent;
    }
    return index;
  }

  string(end) {
    const begin = end - 1;
    const length = this.chars.length;
    for (;;) {
      let next = end;
      let c = "";
      for (; next < length; next++) {
        c = this.chars[next];
        if (c === '"' || c === "\\") break;
        if (c.codePointAt(0) <= 0x1f) throw new Refusal("Invalid control character at", next);
      }
      if (next >= length) throw new Refusal("Unterminated string starting at", begin);
      next++;
      if (c === '"') return next;
      if (next === length) throw new Refusal("Unterminated string starting at", begin);
      c = this.chars[next];
      if (c !== "u") {
        end = next + 1;
        if (!ESCAPES.has(c)) throw new Refusal("Invalid \\escape", end - 2);
        continue;
      }
      next++;
      end = next + 4;
      if (end >= length) throw new Refusal("Invalid \\uXXXX escape", next - 1);
      const hex = this.chars.slice(next, end).join("");
      if (!HEX.test(hex)) throw new Refusal("Invalid \\uXXXX escape", end - 5);
      const unit = parseInt(hex, 16);
      if (unit >= 0xd800 && unit <= 0xdbff && end + 6 < length && this.chars[end] === "\\"
          && this.chars[end + 1] === "u") {
        const low = this.chars.slice(end + 2, end + 6).join("");
        if (!HEX.test(low)) throw new Refusal("Invalid \\uXXXX escape", end + 1);
        const second = parseInt(low, 16);
        if (second >= 0xdc00 && second <= 0xdfff) end += 6;
      }
    }
  }

  object(index) {
    index = this.skip(index);
    if (this.chars[index] === "}") return index + 1;
    for (;;) {
      if (this.chars[index] !== '"') throw new Refusal("Expecting property name enclosed in double quotes", index);
      index = this.skip(this.string(index + 1));
      if (this.chars[index] !== ":") throw new Refusal("Expecting ':' delimiter", index);
      index = this.skip(this.value(this.skip(index + 1)));
      if (this.chars[index] === "}") return index + 1;
      if (this.chars[index] !== ",") throw new Refusal("Expecting ',' delimiter", index);
      index = this.skip(index + 1);
    }
  }

  array(index) {
    index = this.skip(index);
    if (this.chars[index] === "]") return index + 1;
    for (;;) {
      index = this.skip(this.value(index));
      if (this.chars[index] === "]") return index + 1;
      if (this.chars[index] !== ",") throw new Refusal("Expecting ',' delimiter", index);
      index = this.skip(index + 1);
    }
  }

  where(offset) {
    let line = 1;
    let lineStart = 0;
    for (let i = 0; i < offset && i < this.chars.length; i++) {
      if (this.chars[i] === "\n") {
        line++;
        lineStart = i + 1;
      }
    }
    return { line, column: offset - lineStart + 1 };
  }
}

// CPython's messages that end in "at" (the position follows in its own text) read on their own.
function wording(refusal) {
  return `Not valid JSON: ${refusal.message.replace(/( starting)? at$/, "")}.`;
}

/**
 * The syntax problem of ``text`` as ``{message, line, column, endLine, endColumn}``, or null
 * when the text is JSON (any JSON value: that the document must be an object is the server's
 * check, like every other rule).
 */
export function jsonSyntaxProblem(text) {
  try {
    JSON.parse(text);
    return null;
  } catch {
    // not JSON: say where, below
  }
  const scanner = new Scanner(text);
  try {
    scanner.document();
  } catch (error) {
    if (error instanceof Refusal) {
      const start = scanner.where(error.at);
      const end = error.end === undefined ? { line: start.line, column: start.column + 1 } : scanner.where(error.end);
      return { message: wording(error), line: start.line, column: start.column,
               endLine: end.line, endColumn: end.column };
    }
    if (!(error instanceof RangeError)) throw error; // nested deeper than this browser recurses
  }
  return { message: "Not valid JSON.", line: 1, column: 1, endLine: 1, endColumn: 2 };
}
