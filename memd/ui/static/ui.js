// The live views (timeline, a note, what is current, status) follow the index: every few
// seconds ask whether it changed, and if so fetch this view again and put it in place.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main || !main.hasAttribute("data-live")) return;
  var last = null;
  function refresh() {
    fetch(location.href, { headers: { "X-Memd-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null) {
          main.innerHTML = html;
          main.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () {});
  }
  function poll() {
    fetch("/api/stamp", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (answer) {
        if (answer && answer.stamp) {
          if (last !== null && answer.stamp !== last) refresh();
          last = answer.stamp;
        }
      })
      .catch(function () {})
      .then(function () { setTimeout(poll, 2000); });
  }
  poll();
})();
