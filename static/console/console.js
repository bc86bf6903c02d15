// The console's script besides htmx: toasts, modals, a select that submits its form, the
// narrow screens' menu, copy buttons, human times, and field errors that go when edited.
// Everything that decides anything happens on the server; this file only moves focus and text.
(function () {
  "use strict";

  var TOAST_ICONS = { success: "circle-check", error: "circle-alert", warning: "triangle-alert", info: "info" };

  // An icon of the sprite (templates: {% icon %}); the sprite's URL is on <body data-icons>.
  function icon(name) {
    var svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("class", "icon");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    var use = document.createElementNS("http://www.w3.org/2000/svg", "use");
    use.setAttribute("href", (document.body.getAttribute("data-icons") || "") + "#" + name);
    svg.appendChild(use);
    return svg;
  }

  // The markup of templates/console/components/toast.html.
  function toast(level, text) {
    var region = document.getElementById("toasts");
    if (!region) return;
    level = TOAST_ICONS[level] ? level : "info";
    var item = document.createElement("div");
    item.className = "toast toast-" + level;
    var body = document.createElement("div");
    body.className = "toast-body";
    body.textContent = text;
    var close = document.createElement("button");
    close.type = "button";
    close.className = "toast-close";
    close.setAttribute("aria-label", "Dismiss");
    close.setAttribute("data-dismiss-toast", "");
    close.appendChild(icon("x"));
    item.append(icon(TOAST_ICONS[level]), body, close);
    region.appendChild(item);
    setTimeout(function () { item.remove(); }, 12000);
  }

  document.addEventListener("occ:toast", function (event) {
    var items = (event.detail && event.detail.messages) || [];
    items.forEach(function (m) {
      if (m && m.text) toast(m.level, m.text);
    });
  });

  // An error fragment of ours arrives retargeted into the toast region (HX-Retarget); it
  // leaves after a while like any toast.
  document.addEventListener("htmx:afterSwap", function (event) {
    var region = event.detail.target;
    if (region && region.id === "toasts" && region.lastElementChild) {
      var item = region.lastElementChild;
      setTimeout(function () { item.remove(); }, 12000);
    }
  });

  // What responseHandling (base.html) does not swap: an answer that is not ours (a proxy's
  // 502, the server error page). Whether the write happened is unknown.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    toast("error", "Outcome unknown. Refresh and check before trying again. Request ID: " +
      (xhr.getResponseHeader("X-Request-Id") || "unknown"));
  });

  document.addEventListener("htmx:sendError", function () {
    toast("error", "Request interrupted. The outcome is unknown: refresh and check before trying again.");
  });

  // A form with data-outcome-unknown-disables (Create Agent) whose own request was interrupted
  // or got an answer that is not ours (5xx): show its #outcome-unknown panel with a fresh
  // lookup, and disable the buttons that would send it again.
  function revealUnknownOutcome(event) {
    var form = event.detail.elt;
    if (!form || !form.hasAttribute || !form.hasAttribute("data-outcome-unknown-disables")) return;
    if (event.type === "htmx:responseError" && event.detail.xhr.status < 500) return;
    var panel = form.querySelector("#outcome-unknown");
    if (panel) {
      panel.hidden = false;
      var lookup = panel.querySelector("#outcome-lookup");
      if (lookup) lookup.replaceChildren();
    }
    form.querySelectorAll(form.getAttribute("data-outcome-unknown-disables")).forEach(function (button) {
      button.disabled = true;
    });
  }
  document.addEventListener("htmx:sendError", revealUnknownOutcome);
  document.addEventListener("htmx:responseError", revealUnknownOutcome);

  // Modals: a <dialog data-modal> swapped into the page opens itself, takes focus, and gives
  // focus back to whatever opened it when it closes.
  var opener = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-opens-modal")) opener = elt;
  });

  function openModals(root) {
    var dialogs = [];
    if (root.matches && root.matches("dialog[data-modal]")) dialogs.push(root);
    if (root.querySelectorAll) dialogs = dialogs.concat(Array.prototype.slice.call(root.querySelectorAll("dialog[data-modal]")));
    dialogs.forEach(function (dialog) {
      if (dialog.open) return;
      dialog.showModal();
      // A dialog whose action destroys or stops something (a .danger button) gives the focus
      // to Cancel, so Enter never confirms by accident; any other to its first field.
      var cancel = dialog.querySelector("button.danger") && dialog.querySelector("[data-close-modal], .cancel");
      // [autofocus] first: a copy button in the dialog's text must not take the focus.
      var first = cancel || dialog.querySelector("[autofocus]")
        || dialog.querySelector("input:not([type=hidden]), select, textarea, button");
      if (first) first.focus();
      dialog.addEventListener("close", function () {
        dialog.remove();
        if (opener && document.body.contains(opener)) opener.focus();
      }, { once: true });
    });
  }

  // An error summary (components/error_summary.html) takes focus when it arrives, so the
  // person hears and sees what to fix; its links move focus to each field.
  function focusSummary(root) {
    var summary = root.matches && root.matches("[data-takes-focus]") ? root
      : root.querySelector && root.querySelector("[data-takes-focus]");
    if (summary) {
      summary.focus();
      summary.scrollIntoView({ block: "start" });
    }
  }

  document.addEventListener("click", function (event) {
    var link = event.target && event.target.closest && event.target.closest(".error-summary a[href^='#']");
    if (!link) return;
    var field = document.getElementById(link.getAttribute("href").slice(1));
    if (!field) return;
    event.preventDefault();
    var details = field.closest("details");
    if (details) details.open = true;
    field.focus();
    field.scrollIntoView({ block: "center" });
  });

  document.addEventListener("htmx:load", function (event) {
    openModals(event.detail.elt);
    focusSummary(event.detail.elt);
  });
  document.addEventListener("DOMContentLoaded", function () { focusSummary(document.body); });

  document.addEventListener("occ:close-modal", function () {
    document.querySelectorAll("dialog[data-modal][open]").forEach(function (d) { d.close(); });
  });

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target && target.closest && target.closest("[data-close-modal]")) {
      var dialog = target.closest("dialog");
      if (dialog) dialog.close();
    }
  });

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target && target.hasAttribute && target.hasAttribute("data-submit-on-change") && target.form) {
      target.form.requestSubmit();
    }
  });

  // A field's error goes away once the person changes the field: aria-invalid is cleared and
  // the error list it names in aria-describedby (class field-errors) is hidden. The server
  // checks again on the next submit.
  function clearFieldError(event) {
    var field = event.target;
    if (!field || !field.getAttribute || field.getAttribute("aria-invalid") !== "true") return;
    field.removeAttribute("aria-invalid");
    (field.getAttribute("aria-describedby") || "").split(/\s+/).forEach(function (id) {
      var errors = id && document.getElementById(id);
      if (errors && errors.classList.contains("field-errors")) errors.hidden = true;
    });
  }
  document.addEventListener("input", clearFieldError);
  document.addEventListener("change", clearFieldError);

  document.addEventListener("click", function (event) {
    var target = event.target && event.target.closest ? event.target : null;
    if (!target) return;
    var dismiss = target.closest("[data-dismiss-toast]");
    if (dismiss && dismiss.closest(".toast")) dismiss.closest(".toast").remove();

    // The shell's menu button (narrow screens): shows and hides the navigation.
    var menu = target.closest("[data-menu-toggle]");
    if (menu) {
      var sidebar = document.getElementById("sidebar");
      var open = menu.getAttribute("aria-expanded") !== "true";
      menu.setAttribute("aria-expanded", open ? "true" : "false");
      if (sidebar) sidebar.toggleAttribute("data-open", open);
    }

    // A copy button ({% short_id %}): the full id to the clipboard, "Copied" for a moment.
    var copy = target.closest("[data-copy]");
    if (copy && navigator.clipboard) {
      navigator.clipboard.writeText(copy.getAttribute("data-copy")).then(function () {
        copy.setAttribute("data-copied", "");
        copy.replaceChildren(icon("check"));
        toast("success", "Copied " + copy.getAttribute("data-copy"));
        setTimeout(function () {
          copy.removeAttribute("data-copied");
          copy.replaceChildren(icon("copy"));
        }, 1500);
      }, function () { toast("error", "Could not copy: select the ID and copy it instead."); });
    }
  });

  // Human times ({% human_time %}, console/presentation.py human_time): kept current on an
  // open page, with the same rules as the server.
  function humanTime(then, now) {
    var seconds = (now - then) / 1000;
    var future = seconds < 0;
    seconds = Math.abs(seconds);
    var amount;
    if (seconds < 45) return future ? "in a moment" : "just now";
    if (seconds < 3600) amount = Math.max(1, Math.round(seconds / 60)) + " min";
    else if (seconds < 86400) amount = Math.round(seconds / 3600) + " h";
    else if (seconds < 7 * 86400) {
      var days = Math.round(seconds / 86400);
      amount = days + (days === 1 ? " day" : " days");
    } else return new Date(then).toISOString().slice(0, 10);
    return future ? "in " + amount : amount + " ago";
  }
  function refreshTimes() {
    var now = Date.now();
    document.querySelectorAll("time[data-relative][datetime]").forEach(function (el) {
      var then = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(then)) {
        var text = humanTime(then, now);
        if (el.textContent !== text) el.textContent = text;
      }
    });
  }
  setInterval(refreshTimes, 30000);
})();
