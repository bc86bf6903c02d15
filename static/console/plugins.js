// The plugin picker's glue (templates/console/plugins/picker.html). The server renders every
// pane; this file only keeps the selections JSON (the single source of truth) in step with the
// controls, and drops stale work: a search being typed, or a changed credential.
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
    if (value === "true") value = true;
    else if (value === "false") value = false;
    else if (value === "") value = undefined;
    assign(selections[id], JSON.parse(control.getAttribute("data-plugin-path")), value);
    write(p, selections);
    badge(p, id, selections);
    if (control.type === "checkbox") refreshDetail(p);  // plugin policies follow enablement
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-plugin-action], [data-plugin-back], [data-plugin-view]");
    var p = picker(button);
    if (!button || !p) return;
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

  // A row opens its details (on narrow screens the detail pane covers the list).
  document.addEventListener("htmx:afterSwap", function (event) {
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
    abortBrowsing(p);
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
