// The value-carrying widgets (fsm_sites/render/value_widgets.py): each interaction becomes one
// event of the machine, sent through site.js (window.__fsm.send).
//   slider     a press on the track or a drag of its thumb; on release the nearest stop of
//              `data-stops` (spread evenly over the track) is sent as `change` if it differs
//              from the shown one; arrow keys send the next or previous stop.
//   date picker  its field and the open grid's days carry data-ev="open" / "pick".
//   data table   a sortable column's heading carries data-ev="sort" and the order it asks for;
//              a paged table's pager buttons data-ev="page" and the page number they ask for.
//   sortable   a press on an item's handle, a drag, a release: `move` with "from>to", where
//              `to` counts the other items whose middle lies above the release point; the
//              item follows the pointer meanwhile (an inline transform, gone with the swap).
// Handlers are delegated to `document`, so swapped-in pages need nothing run again.
(function () {
  if (window.__fsmWidgets || !window.__fsm) return;
  window.__fsmWidgets = true;
  var fsm = window.__fsm;

  function stopsOf(slider) { return (slider.getAttribute("data-stops") || "").split(","); }
  function stopAt(slider, clientX) {
    var track = slider.querySelector(".slider-track").getBoundingClientRect();
    var stops = stopsOf(slider), span = Math.max(stops.length - 1, 1);
    var frac = Math.min(1, Math.max(0, (clientX - track.left) / Math.max(track.width, 1)));
    return { index: Math.round(frac * span), stops: stops, span: span };
  }
  function showStop(slider, at) {
    var pct = (100 * at.index / at.span) + "%";
    slider.querySelector(".slider-thumb").style.left = pct;
    slider.querySelector(".slider-fill").style.width = pct;
  }
  function sendStop(slider, value) {
    if (value !== undefined && value !== slider.getAttribute("aria-valuenow")) {
      fsm.send(slider.getAttribute("data-el"), "change", value);
    }
  }

  var drag = null;  // {kind: "slider"|"sortable", ...} while a pointer is down on a widget
  document.addEventListener("pointerdown", function (e) {
    if (e.button !== 0) return;
    var slider = e.target.closest(".slider[data-el]");
    if (slider) {
      e.preventDefault();
      drag = { kind: "slider", el: slider };
      showStop(slider, stopAt(slider, e.clientX));
      return;
    }
    var handle = e.target.closest(".drag-handle");
    var item = handle && handle.closest(".sortable-item[data-el]");
    if (item) {
      e.preventDefault();
      var items = Array.prototype.slice.call(item.parentNode.querySelectorAll(".sortable-item[data-el]"));
      drag = { kind: "sortable", el: item, startY: e.clientY, from: items.indexOf(item),
               middles: items.map(function (it) { var r = it.getBoundingClientRect(); return r.top + r.height / 2; }) };
      item.classList.add("dragging");
    }
  }, true);
  document.addEventListener("pointermove", function (e) {
    if (!drag) return;
    if (drag.kind === "slider") showStop(drag.el, stopAt(drag.el, e.clientX));
    else drag.el.style.transform = "translateY(" + (e.clientY - drag.startY) + "px)";
  }, true);
  document.addEventListener("pointerup", function (e) {
    var d = drag;
    drag = null;
    if (!d) return;
    if (d.kind === "slider") {
      var at = stopAt(d.el, e.clientX);
      sendStop(d.el, at.stops[at.index]);
      return;
    }
    d.el.classList.remove("dragging");
    d.el.style.transform = "";
    var to = 0;
    d.middles.forEach(function (middle, i) { if (i !== d.from && middle < e.clientY) to += 1; });
    if (to !== d.from) fsm.send(d.el.getAttribute("data-el"), "move", d.from + ">" + to);
  }, true);

  // The picker's field and its days: their own events, with the day's value.
  document.addEventListener("click", function (e) {
    var part = e.target.closest(".datepicker [data-ev], [data-ev='sort'], [data-ev='page']");
    if (!part) return;
    e.preventDefault();
    var host = part.closest("[data-el]");
    fsm.send(host.getAttribute("data-el"), part.getAttribute("data-ev"), part.getAttribute("data-value"));
  });

  document.addEventListener("keydown", function (e) {
    var slider = e.target.closest && e.target.closest(".slider[data-el]");
    if (!slider || (e.key !== "ArrowLeft" && e.key !== "ArrowRight")) return;
    e.preventDefault();
    var stops = stopsOf(slider), i = stops.indexOf(slider.getAttribute("aria-valuenow"));
    sendStop(slider, stops[i + (e.key === "ArrowRight" ? 1 : -1)]);
  });
})();
