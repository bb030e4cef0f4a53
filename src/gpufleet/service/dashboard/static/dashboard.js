// gpufleet dashboard: local times with relative hints, live refresh over the event stream,
// confirmation dialogs for admin actions. No build step; htmx does the requests and swaps.
(function () {
  "use strict";

  // "2 h 10 min", "45 s", "3 d 4 h": the largest unit and the next one when it is not zero, as
  // format.py's duration_words (the two must agree: the server renders, this refreshes).
  var UNITS = [["d", 86400], ["h", 3600], ["min", 60], ["s", 1]];
  function durationWords(seconds) {
    var s = Math.round(Math.abs(seconds));
    for (var i = 0; i < UNITS.length - 1; i++) {
      var n = Math.floor(s / UNITS[i][1]);
      if (n > 0) {
        var rest = Math.floor((s - n * UNITS[i][1]) / UNITS[i + 1][1]);
        return n + " " + UNITS[i][0] + (rest > 0 ? " " + rest + " " + UNITS[i + 1][0] : "");
      }
    }
    return s + " s";
  }

  function relativeHint(when, now) {
    var delta = (when - now) / 1000;
    if (Math.abs(delta) < 30) return "now";
    return delta > 0 ? "in " + durationWords(delta) : durationWords(delta) + " ago";
  }

  var timeFormat = new Intl.DateTimeFormat(undefined, {
    month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short"});

  // Every <time datetime=ISO> becomes "Dec 2, 06:10 CET (in 2 h 10 min)" in the reader's zone.
  function localizeTimes(root) {
    var now = Date.now();
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var when = Date.parse(el.getAttribute("datetime"));
      if (isNaN(when)) return;
      el.title = new Date(when).toISOString();
      var text = timeFormat.format(new Date(when));
      if (!el.hasAttribute("data-no-hint")) text += " (" + relativeHint(when, now) + ")";
      el.textContent = text;
    });
  }

  // One EventSource for the page; a decision event asks the live panels to refresh at once, and
  // the events of the next 200 ms are coalesced into one more refresh at its end (a burst of
  // decisions is two rounds of requests, and the first decision is on screen without waiting).
  function connectStream() {
    var body = document.body;
    var url = body.getAttribute("data-stream");
    var status = document.getElementById("live-status");
    if (!url || !window.EventSource) return;
    var pending = null;
    var source = new EventSource(url);
    function say(state, text) {
      if (!status) return;
      status.setAttribute("data-state", state);
      status.textContent = text;
    }
    source.onopen = function () { say("live", "live"); };
    source.onerror = function () { say("lost", "reconnecting…"); };
    var again = false;
    // A panel an action replaces (a form's POST) keeps its confirmation on screen for 1.5 s: the
    // action's own decision event comes a few ms behind it (or before its answer), so a refresh
    // that would land meanwhile is dropped and asked for again once the 1.5 s have passed.
    var holdUntil = 0;
    function isPost(event) {
      var cfg = event.detail && event.detail.requestConfig;
      return !!cfg && cfg.verb === "post";
    }
    body.addEventListener("htmx:beforeRequest", function (event) {
      if (isPost(event)) holdUntil = Date.now() + 30000;
    });
    body.addEventListener("htmx:afterRequest", function (event) {
      if (isPost(event)) holdUntil = event.detail.successful ? Date.now() + 1500 : 0;
    });
    body.addEventListener("htmx:beforeSwap", function (event) {
      if (!isPost(event) && Date.now() < holdUntil) {
        event.detail.shouldSwap = false;
        if (!pending) refresh();
      }
    });
    function refresh() {
      var hold = holdUntil - Date.now();
      if (hold > 0) {
        pending = setTimeout(function () { pending = null; again = false; refresh(); }, hold);
        return;
      }
      htmx.trigger(body, "fleet-changed");
      pending = setTimeout(function () {
        pending = null;
        if (again) { again = false; refresh(); }
      }, 200);
    }
    source.onmessage = function (event) {
      body.setAttribute("data-last-event", event.lastEventId || String(Date.now()));
      if (pending) { again = true; return; }
      refresh();
    };
    window.addEventListener("beforeunload", function () { source.close(); });
  }

  // <button data-confirm="dialog-id"> opens that <dialog>; its form does the request.
  function wireConfirmations(root) {
    (root || document).querySelectorAll("button[data-confirm]").forEach(function (btn) {
      if (btn.dataset.wired) return;
      btn.dataset.wired = "1";
      btn.addEventListener("click", function () {
        var dialog = document.getElementById(btn.getAttribute("data-confirm"));
        if (dialog) dialog.showModal();
      });
    });
    (root || document).querySelectorAll("dialog button[data-cancel]").forEach(function (btn) {
      if (btn.dataset.wired) return;
      btn.dataset.wired = "1";
      btn.addEventListener("click", function () { btn.closest("dialog").close(); });
    });
  }

  // <input type=file data-bundle-for=ID>: the chosen files become {name: text} JSON in the hidden
  // field ID, so the form posts the bundle with the rest (the service diagnoses it: ops.diagnose).
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches("input[type=file][data-bundle-for]")) return;
    var hidden = document.getElementById(input.getAttribute("data-bundle-for"));
    var files = Array.prototype.slice.call(input.files || []);
    Promise.all(files.map(function (f) { return f.text(); })).then(function (texts) {
      var bundle = {};
      files.forEach(function (f, i) { bundle[f.name] = texts[i]; });
      hidden.value = files.length ? JSON.stringify(bundle) : "";
    });
  });

  document.addEventListener("DOMContentLoaded", function () {
    localizeTimes(document);
    wireConfirmations(document);
    connectStream();
    setInterval(function () { localizeTimes(document); }, 30000);
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    localizeTimes(event.target);
    wireConfirmations(event.target);
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var dialog = event.target.closest && event.target.closest("dialog");
    if (dialog && event.detail.successful) dialog.close();
  });

  window.gpufleet = {durationWords: durationWords, relativeHint: relativeHint, localizeTimes: localizeTimes};
})();
