// The plugin picker's glue (templates/console/plugins/picker.html). The server renders every
// pane; this file only keeps the selections JSON (the single source of truth) in step with the
// controls, remembers the names of the entries it has seen (for the Configured view), and drops
// stale work: a search being typed, or any answer to a request sent before the credential changed.
(function () {
  "use strict";

  function picker(el) { return el && el.closest(".plugin-picker"); }
  function field(p) { return p.querySelector("[data-plugin-selections]"); }

  function read(p) {
    var feedback = p.querySelector("[data-plugin-feedback]");
    try {
      var text = field(p).value.trim();
      var value = text ? JSON.parse(text) : {};
      if (value && typeof value === "object" && !Array.isArray(value)) {
        if (feedback) feedback.hidden = true;
        return value;
      }
    } catch (e) { /* reported below */ }
    if (feedback) feedback.hidden = false;
    return null;
  }

  function write(p, selections) {
    var area = field(p);
    area.value = JSON.stringify(selections, null, 2);
    area.dispatchEvent(new Event("change", { bubbles: true }));
    var summary = p.querySelector("[data-plugin-summary]");
    if (summary) {
      summary.textContent = Object.keys(selections).length +
        " plugin(s) configured. Select plugins and set their tool policies.";
    }
  }

  function badge(p, id, selections) {
    p.querySelectorAll("[data-plugin-row]").forEach(function (row) {
      if (row.getAttribute("data-plugin-row") !== id) return;
      var b = row.querySelector("[data-plugin-badge]");
      var s = selections[id];
      if (b) b.textContent = !s ? "Not selected" : (s.enabled === false ? "Disabled" : "Enabled");
    });
  }

  // Set (or, for undefined, remove) path inside obj, dropping objects left empty.
  function assign(obj, path, value) {
    var key = path[0];
    if (path.length === 1) {
      if (value === undefined) delete obj[key]; else obj[key] = value;
      return;
    }
    if (typeof obj[key] !== "object" || obj[key] === null) {
      if (value === undefined) return;
      obj[key] = {};
    }
    assign(obj[key], path.slice(1), value);
    if (Object.keys(obj[key]).length === 0) delete obj[key];
  }

  function refreshDetail(p) {
    var detail = p.querySelector("#plugin-detail");
    if (detail && window.htmx) window.htmx.trigger(detail, "plugin-refresh");
  }

  document.addEventListener("change", function (event) {
    var control = event.target.closest && event.target.closest("[data-plugin-path]");
    var p = picker(control);
    if (!control || !p) return;
    var selections = read(p);
    var id = control.getAttribute("data-plugin-id");
    if (!selections || !selections[id]) return;
    var value = control.type === "checkbox" ? control.checked : control.value;
    if (control.hasAttribute("data-plugin-approvers")) {
      var ids = control.value.split(/[\s,]+/).filter(function (id, i, all) { return id && all.indexOf(id) === i; });
      value = ids.length ? ids.map(function (id) { return { channel: "slack", id: id }; }) : undefined;
    } else if (value === "true") value = true;
    else if (value === "false") value = false;
    else if (value === "") value = undefined;
    assign(selections[id], JSON.parse(control.getAttribute("data-plugin-path")), value);
    write(p, selections);
    badge(p, id, selections);
    if (control.type === "checkbox") refreshDetail(p);  // plugin policies follow enablement
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-plugin-action], [data-plugin-back], [data-plugin-view], [data-plugin-reviewer-all]");
    var p = picker(button);
    if (!button || !p) return;
    if (button.hasAttribute("data-plugin-reviewer-all")) {
      // The driver sets one reviewer for all of a plugin's tools: that is the plugin's own control.
      var target = document.getElementById(button.getAttribute("data-plugin-reviewer-all"));
      if (target) { target.scrollIntoView({ block: "center" }); target.focus(); }
      return;
    }
    if (button.hasAttribute("data-plugin-view")) {
      p.querySelector("#plugin-view").value = button.getAttribute("data-plugin-view");
      return;  // htmx asks for the view
    }
    if (button.hasAttribute("data-plugin-back")) {
      p.querySelector("#plugin-detail").classList.remove("is-open");
      var search = p.querySelector("#plugin-search");
      if (search) search.focus();
      return;
    }
    var selections = read(p);
    if (!selections) return;
    var id = button.getAttribute("data-plugin-id");
    if (button.getAttribute("data-plugin-action") === "add") selections[id] = { enabled: true };
    else delete selections[id];
    write(p, selections);
    badge(p, id, selections);
    refreshDetail(p);
  });

  // A logo that does not load gives way to the entry's initial.
  document.addEventListener("error", function (event) {
    var img = event.target;
    if (!img || img.tagName !== "IMG" || !picker(img)) return;
    var initial = document.createElement("span");
    initial.className = "plugin-initial";
    initial.setAttribute("aria-hidden", "true");
    var name = img.parentElement && img.parentElement.querySelector(".plugin-name, h3");
    initial.textContent = name ? name.textContent.trim().charAt(0).toUpperCase() : "?";
    img.replaceWith(initial);
  }, true);

  // --- names seen on earlier pages: the Configured view shows them for entries not on this page.
  var KNOWN_MAX = 200;
  function knownField(p) { return p.querySelector("[data-plugin-known]"); }
  function readKnown(p) {
    try { var v = JSON.parse(knownField(p).value || "{}"); return v && typeof v === "object" ? v : {}; }
    catch (e) { return {}; }
  }
  function remember(p) {
    var field = knownField(p);
    if (!field) return;
    var known = readKnown(p);
    p.querySelectorAll("#plugin-results [data-plugin-row]").forEach(function (row) {
      var id = row.getAttribute("data-plugin-row");
      var name = row.querySelector(".plugin-name");
      if (id && name && name.textContent.trim() && name.textContent.trim() !== id) known[id] = name.textContent.trim();
    });
    var keys = Object.keys(known);
    keys.slice(0, Math.max(0, keys.length - KNOWN_MAX)).forEach(function (k) { delete known[k]; });
    field.value = JSON.stringify(known);
  }

  // --- stale answers: every request carries the generation it was sent in; a credential change
  // starts a new one, and an answer of an older generation is never swapped in.
  var sentIn = new WeakMap();
  function generation(p) { return Number(p.getAttribute("data-plugin-generation") || "0"); }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var p = picker(event.detail.elt);
    if (p && event.detail.xhr) sentIn.set(event.detail.xhr, generation(p));
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var p = picker(event.detail.elt) || picker(event.detail.target);
    if (!p || !event.detail.xhr || !sentIn.has(event.detail.xhr)) return;
    if (sentIn.get(event.detail.xhr) !== generation(p)) event.detail.shouldSwap = false;
  });

  // A row opens its details (on narrow screens the detail pane covers the list).
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "plugin-results") {
      var results = document.getElementById("plugin-results");
      if (picker(results)) remember(picker(results));
    }
    // outerHTML: the event's target is the element that was replaced; the new one has its id.
    var target = event.detail.target && event.detail.target.id === "plugin-detail" &&
      document.getElementById("plugin-detail");
    if (target) {
      target.classList.add("is-open");
      var heading = target.querySelector("h3");
      if (heading && event.detail.requestConfig && event.detail.requestConfig.elt &&
          event.detail.requestConfig.elt.hasAttribute("data-plugin-row")) {
        heading.setAttribute("tabindex", "-1");
        heading.focus();
      }
    }
  });

  function abortBrowsing(p) {
    if (!window.htmx) return;
    p.querySelectorAll("#plugin-search, #plugin-results, #plugin-tabs button, .plugin-paging button")
      .forEach(function (el) { window.htmx.trigger(el, "htmx:abort"); });
  }

  function status(p, text) {
    var results = p.querySelector("#plugin-results");
    if (!results) return;
    var line = document.createElement("p");
    line.className = "status";
    line.textContent = text;
    results.replaceChildren(line);
  }

  // Typing a search: what is on screen is stale at once; the request follows the delay.
  document.addEventListener("input", function (event) {
    var p = picker(event.target);
    if (!p || event.target.id !== "plugin-search") return;
    abortBrowsing(p);
    status(p, "Searching plugins…");
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || !event.target || event.target.id !== "plugin-search") return;
    event.preventDefault();  // never submits the page's form
    var p = picker(event.target);
    abortBrowsing(p);
    status(p, "Searching plugins…");
    if (window.htmx) window.htmx.trigger(event.target, "plugin-search-now");
  });

  // A changed credential clears discovery (never the selections) and loads page one again.
  document.addEventListener("change", function (event) {
    var input = event.target.closest && event.target.closest("[data-plugin-credential]");
    var p = picker(input);
    if (!input || !p) return;
    if (input.value === (input.getAttribute("data-plugin-last") || "")) return;  // a blur after a change
    input.setAttribute("data-plugin-last", input.value);
    p.setAttribute("data-plugin-generation", String(generation(p) + 1));
    abortBrowsing(p);
    var known = knownField(p), selections = read(p) || {};
    if (known) {  // discovery is cleared; only the names of what stays selected are kept
      var kept = {}, names = readKnown(p);
      Object.keys(names).forEach(function (id) { if (selections[id]) kept[id] = names[id]; });
      known.value = JSON.stringify(kept);
    }
    var detail = p.querySelector("#plugin-detail");
    if (detail && window.htmx) window.htmx.trigger(detail, "htmx:abort");
    if (detail) {
      var hint = document.createElement("p");
      hint.className = "hint";
      hint.textContent = "Choose a plugin to see its details and policies.";
      detail.replaceChildren(hint);
      detail.classList.remove("is-open");
    }
    p.querySelector("#plugin-view").value = "available";
    var search = p.querySelector("#plugin-search");
    if (search) search.value = "";
    status(p, "Loading available plugins…");
    if (window.htmx) window.htmx.trigger(p.querySelector("#plugin-results"), "plugin-reload");
  });
})();
