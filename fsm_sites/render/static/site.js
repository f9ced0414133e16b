// Sends UI events of [data-el] elements to the site server, then reloads the page so
// the next screenshot shows the new state. Relative URLs: the page lives at
// <session>/ and posts to <session>/event, so the HTML is the same for every session.
(function () {
  var page = document.body.getAttribute("data-page");
  window.__fsm = { pending: false, page: page };
  function send(el, event, value) {
    if (window.__fsm.pending) return;
    window.__fsm.pending = true;
    var body = JSON.stringify({ page: page, element: el, event: event, value: value });
    fetch("event", { method: "POST", headers: { "content-type": "application/json" }, body: body })
      .then(function (r) { return r.json(); })
      .then(function (d) { location.replace("./?v=" + (d.seq === undefined ? "x" : d.seq)); })
      .catch(function () { location.replace("./?v=x"); });
  }
  function closeMenus(except) {
    document.querySelectorAll(".dd-menu").forEach(function (m) { if (m !== except) m.hidden = true; });
  }
  document.addEventListener("click", function (e) {
    var option = e.target.closest(".dd-option");
    if (option) {
      e.preventDefault();
      send(option.closest("[data-el]").getAttribute("data-el"), "select", option.getAttribute("data-value"));
      return;
    }
    var toggle = e.target.closest(".dd-toggle");
    if (toggle) {
      e.preventDefault();
      var menu = toggle.parentNode.querySelector(".dd-menu");
      closeMenus(menu);
      menu.hidden = !menu.hidden;
      return;
    }
    closeMenus(null);
    // The clicked thing may be an option of a radio group: its value rides along.
    var el = e.target.closest("[data-ev='click']");
    if (el) {
      e.preventDefault();
      send(el.closest("[data-el]").getAttribute("data-el"), "click", el.getAttribute("data-value"));
      return;
    }
    if (e.target.closest("a[href='#']")) e.preventDefault();
  });
  document.addEventListener("change", function (e) {
    var t = e.target;
    var holder = t.closest("[data-el]");
    if (!holder) return;
    var kind = holder.getAttribute("data-kind");
    if (kind === "checkbox") send(holder.getAttribute("data-el"), t.checked ? "check" : "uncheck", null);
    else if (kind === "text_input") send(holder.getAttribute("data-el"), "input", t.value);
  });
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.key === "Enter" && t.getAttribute && t.getAttribute("data-kind") === "text_input") {
      e.preventDefault();
      send(t.getAttribute("data-el"), "input", t.value);
    }
  });
})();
